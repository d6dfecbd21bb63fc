package classify

import "testing"

func TestPullPolicyDefaultFollowsTheImagesTag(t *testing.T) {
	for image, want := range map[string]string{
		"nginx": "Always", "nginx:latest": "Always", "registry.example.com:5000/nginx": "Always",
		"registry.example.com:5000/team/nginx:latest": "Always", "registry.example.com:5000/nginx:1.27": "IfNotPresent",
		"nginx:1.27": "IfNotPresent", "nginx@sha256:0000": "IfNotPresent", "nginx:latest@sha256:0000": "IfNotPresent",
	} {
		if got := pullPolicyDefault(image); got != want {
			t.Errorf("pullPolicyDefault(%q) = %s, want %s", image, got, want)
		}
	}
}

// Which unowned Added fields cannot be server defaults.
func TestNotADefault(t *testing.T) {
	deploy := Object{Group: "apps", Kind: "Deployment"}
	pod := Object{Kind: "Pod"}
	job := Object{Group: "batch", Kind: "Job"}
	c := `.spec.template.spec.containers[name="app"].`
	for _, tt := range []struct {
		o    Object
		ch   Change
		want bool
	}{
		{deploy, Change{Path: c + "imagePullPolicy", Live: "IfNotPresent", ContainerImage: "nginx:1.27"}, false},
		{deploy, Change{Path: c + "imagePullPolicy", Live: "Always", ContainerImage: "nginx:1.27"}, true},
		{deploy, Change{Path: c + "imagePullPolicy", Live: "Always", ContainerImage: "nginx"}, false},
		{deploy, Change{Path: c + "imagePullPolicy", Live: "Never"}, false}, // no image: the default is not known
		{deploy, Change{Path: c + "terminationMessagePolicy", Live: "FallbackToLogsOnError"}, true},
		{deploy, Change{Path: c + "readinessProbe", Live: "{}"}, true},
		{deploy, Change{Path: c + "readinessProbe.periodSeconds", Live: "10"}, false}, // under a probe Git declares
		{deploy, Change{Path: ".spec.template.spec.tolerations", Live: "[]"}, true},
		{deploy, Change{Path: ".spec.template.spec.dnsPolicy", Live: "ClusterFirst"}, false},
		{deploy, Change{Path: ".spec.template.spec.dnsPolicy", Live: "Default"}, true},
		{deploy, Change{Path: ".spec.template.spec.restartPolicy", Live: "Always"}, false},
		{job, Change{Path: ".spec.template.spec.restartPolicy", Live: "OnFailure"}, false}, // a Job's has no default
		{pod, Change{Path: ".spec.tolerations", Live: "[]"}, false},                        // admission plugins fill a Pod's in
		{pod, Change{Path: `.spec.containers[name="app"].imagePullPolicy`, Live: "Always", ContainerImage: "nginx:1.27"}, true},
		{pod, Change{Path: `.spec.containers[name="app"].volumeMounts`, Live: "[]"}, false}, // the ServiceAccount plugin's token
		{deploy, Change{Path: ".spec.revisionHistoryLimit", Live: "10"}, false},
	} {
		if got := notADefault(tt.o, tt.ch); got != tt.want {
			t.Errorf("%s %s = %s: notADefault %v, want %v", tt.o.Kind, tt.ch.Path, tt.ch.Live, got, tt.want)
		}
	}
}
