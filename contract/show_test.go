package contract

import (
	"bytes"
	"testing"

	"github.com/calricon/driftscan/fixtures/golden"
)

func TestShowMarkdownIsARunbookTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, example(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "show.md.golden", b.Bytes())
}

func TestShowTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, example(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "show.txt.golden", b.Bytes())
}
