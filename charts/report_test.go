package charts

import (
	"path"
	"strings"
	"testing"
)

func TestTheHTMLReportIsWrittenToTheClaimOncePerShard(t *testing.T) {
	r := render(t, `{shards: 2, report: {html: {enabled: true, existingClaim: reports}}}`)
	args, err := r.Args(map[string]string{"NAMESPACE": "driftscan", "JOB_COMPLETION_INDEX": "1"})
	if err != nil {
		t.Fatal(err)
	}
	file := ""
	for i, a := range args {
		if a == "--output" && i+1 < len(args) && strings.HasPrefix(args[i+1], "html=") {
			file = strings.TrimPrefix(args[i+1], "html=")
		}
	}
	if file != "/var/lib/driftscan/report/report-1.html" {
		t.Fatalf("shard 1 writes its HTML report to %q, want report-1.html on the report volume; args %q", file, args)
	}
	c := container(t, r)
	mounted := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == path.Dir(file) && !m.ReadOnly {
			mounted = m.Name
		}
	}
	if mounted == "" {
		t.Fatalf("nothing writable is mounted at %s: %+v", path.Dir(file), c.VolumeMounts)
	}
	for _, v := range cronJob(t, r).Spec.JobTemplate.Spec.Template.Spec.Volumes {
		if v.Name == mounted {
			if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "reports" {
				t.Errorf("volume %s = %+v, want the claim reports", v.Name, v.VolumeSource)
			}
			return
		}
	}
	t.Errorf("no volume %s in the pod", mounted)
}
