package scanner

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/calricon/driftscan/report"
)

// record puts into f what the scan knows of the change beyond display text:
// the JSON pointer, the path one serialized element at a time, and both
// values as JSON values. The masker runs after it and takes the values out
// again where they must not leave.
func (ch change) record(f *report.Finding) {
	f.Pointer = ch.pointer()
	f.PathElements = pathElements(ch.Path)
	f.GitValue, f.LiveValue = nil, nil
	if ch.GitPresent && ch.Git != nil {
		f.GitValue = runtime.DeepCopyJSONValue(ch.Git)
	}
	if ch.LivePresent && ch.Live != nil {
		f.LiveValue = runtime.DeepCopyJSONValue(ch.Live)
	}
}

// pathElements serializes each element of p the way managedFields do
// ("f:spec", `k:{"name":"app"}`, `v:"x"`, "i:0").
func pathElements(p fieldpath.Path) []string {
	out := make([]string, len(p))
	for i, pe := range p {
		s, err := fieldpath.SerializePathElement(pe)
		if err != nil {
			// Only a PathElement with no member set fails, which a
			// comparison never yields.
			s = pe.String()
		}
		out[i] = s
	}
	return out
}
