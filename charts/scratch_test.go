package charts

import (
	"fmt"
	"testing"
)

func TestScratch(t *testing.T) {
	o := DefaultOptions()
	o.Values = map[string]any{"shards": 3, "rbac": map[string]any{"scope": "namespaces", "namespaces": []any{"a", "b"}, "apiGroups": []any{"", "apps"}}, "secrets": map[string]any{"git": map[string]any{"name": "git-creds"}}}
	r, err := Render(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(r.Manifest)
	fmt.Println(r.Notes)
	fmt.Println(len(r.Objects))
}
