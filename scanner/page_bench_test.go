package scanner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// benchPage is a LIST page of n Deployments as the API server writes it.
func benchPage(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"123","continue":"abc"},"items":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metadata":{"name":"web-%d","namespace":"ns-1","uid":"6b1f8c2e-0000-4000-8000-%012d","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-12-01T12:00:00Z","labels":{"app":"web-%d","app.kubernetes.io/instance":"app-1"},"annotations":{"deployment.kubernetes.io/revision":"1"},"managedFields":[{"manager":"argocd-controller","operation":"Apply","apiVersion":"apps/v1","time":"2026-12-01T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}},{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","time":"2026-12-01T12:00:01Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:conditions":{},"f:observedGeneration":{}}},"subresource":"status"}]},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web-%d"}},"template":{"metadata":{"labels":{"app":"web-%d"}},"spec":{"containers":[{"name":"app","image":"nginx:1.25","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%%","maxSurge":"25%%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},"status":{"observedGeneration":1,"conditions":[{"type":"Progressing","status":"True","lastUpdateTime":"2026-12-01T12:00:01Z","lastTransitionTime":"2026-12-01T12:00:01Z","reason":"NewReplicaSetCreated","message":"Created new replica set"}]}}`, i, i, 1000+i, i, i, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkReadPage is the scan's reading of a page of 500 Deployments
// (each item's head, nothing decoded), next to what the LIST floor does
// with the same bytes (bench/listfloor: skip every item).
func BenchmarkReadPage(b *testing.B) {
	page := benchPage(500)
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			if _, err := readPage(bytes.NewReader(page), gvk, func(*listItem) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		for b.Loop() {
			var p struct {
				Metadata struct {
					Continue string `json:"continue"`
				} `json:"metadata"`
			}
			if err := json.NewDecoder(bytes.NewReader(page)).Decode(&p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
