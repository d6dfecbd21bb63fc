package scanner

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/calricon/driftscan/config"
	"github.com/calricon/driftscan/fixtures/cluster"
	"github.com/calricon/driftscan/fixtures/sops"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// sopsRepo writes SOPS-encrypted manifests, encrypted by the real sops,
// and applies each decrypted by the real sops, as kustomize-controller
// applies it. It returns the folder and the plain texts that must never
// reach a report.
func sopsRepo(t *testing.T, ns string) (string, []string) {
	t.Helper()
	key := sops.NewKey(t)
	// A SOPS file in a Secret's data entry, as a secretGenerator's files
	// put one there: kustomize-controller decrypts the entry.
	inner := sops.Encrypt(t, key, "user: app\npassword: sops-plain-inner\n", "^password$")
	files := sops.Manifests(t, key)
	files["generated.yaml"] = `apiVersion: v1
kind: Secret
metadata: {name: generated}
data:
  mode: ` + base64.StdEncoding.EncodeToString([]byte("primary")) + `
  config.yaml: ` + base64.StdEncoding.EncodeToString([]byte(inner)) + "\n"
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		plain := text
		if name == "generated.yaml" {
			plain = strings.Replace(text, base64.StdEncoding.EncodeToString([]byte(inner)), base64.StdEncoding.EncodeToString([]byte(sops.Decrypt(t, key, inner))), 1)
		} else {
			plain = sops.Decrypt(t, key, text)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(plain), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if err := appliedAs(config.AppliedAsFlux, obj); err != nil {
			t.Fatal(err)
		}
		env.Apply(t, "kustomize-controller", ns, obj)
	}
	return dir, sops.Leaks
}

// sopsApp is a Flux app of dir that decrypts with SOPS.
func sopsApp(dir string) config.App {
	return config.App{Name: "vault", Source: config.Source{Path: dir}, AppliedAs: config.AppliedAsFlux,
		Decryption: config.DecryptionSOPS, Appliers: []string{"kustomize-controller"}}
}

func TestSOPSEncryptedValuesAreComparedByWhoWroteThem(t *testing.T) {
	ns := env.Namespace(t, nil)
	dir, plain := sopsRepo(t, ns)
	noneOf := func(t *testing.T, r *report.Report, extra ...string) {
		t.Helper()
		data, _ := json.Marshal(r)
		for _, s := range append(plain, extra...) {
			if strings.Contains(string(data), s) {
				t.Errorf("the report holds %q", s)
			}
		}
	}

	r := runScan(t, scanConfig(ns, sopsApp(dir)), func(o *Options) { o.ExplainDismissed = true })
	if got := rows(r); len(got) != 0 {
		t.Fatalf("the applier wrote every encrypted value: want no finding, got\n%s", dump(got))
	}
	want := map[string]report.Status{"Secret/db-creds": report.StatusInSync, "ConfigMap/settings": report.StatusInSync, "Secret/generated": report.StatusInSync}
	if diff := cmp.Diff(want, statuses(r)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	var encrypted []string
	for _, o := range r.Apps[0].Objects {
		for _, d := range o.Dismissed {
			if d.Reason == report.Encrypted {
				encrypted = append(encrypted, o.Kind+"/"+o.Name+" "+d.Path+" "+d.Git+" "+d.Live+" "+d.Manager)
			}
		}
	}
	wantDismissed := []string{
		"Secret/db-creds .data.password *** *** (differs) kustomize-controller",
		"Secret/db-creds .data.token *** *** (differs) kustomize-controller",
		"Secret/db-creds .data.username *** *** (differs) kustomize-controller",
		"ConfigMap/settings .data.dsn *** *** (differs) kustomize-controller",
		"Secret/generated .data.config.yaml *** *** (differs) kustomize-controller",
	}
	if diff := cmp.Diff(wantDismissed, encrypted, sortStrings); diff != "" {
		t.Errorf("dismissed as encrypted (-want +got):\n%s", diff)
	}
	noneOf(t, r)

	// Someone changes two encrypted values and removes a third.
	env.Patch(t, "kubectl-edit", cluster.Secret, ns, "db-creds", types.MergePatchType, `{"data":{"password":"`+base64.StdEncoding.EncodeToString([]byte("typed-by-hand"))+`"}}`)
	env.Patch(t, "kubectl-edit", cluster.ConfigMap, ns, "settings", types.MergePatchType, `{"data":{"dsn":"postgres://app:typed-by-hand@db.internal/app"}}`)
	env.Patch(t, "kubectl-patch", cluster.Secret, ns, "generated", types.JSONPatchType, `[{"op":"remove","path":"/data/config.yaml"}]`)
	r = runScan(t, scanConfig(ns, sopsApp(dir)))
	wantRows := []row{
		{Object: "ConfigMap/settings", Path: ".data.dsn", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "***", Live: "*** (differs)"},
		{Object: "Secret/db-creds", Path: ".data.password", Type: report.TypeChanged, Class: report.ClassHuman, Manager: "kubectl-edit", Git: "***", Live: "*** (differs)"},
		// A removal leaves its remover no field to own: nobody is on record.
		{Object: "Secret/generated", Path: ".data.config.yaml", Type: report.TypeRemoved, Class: report.ClassUnknown, Git: "***"},
	}
	if diff := cmp.Diff(wantRows, rows(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	for _, o := range r.Apps[0].Objects {
		for _, f := range o.Findings {
			if !strings.Contains(f.Hint, "encrypted with SOPS") {
				t.Errorf("%s %s: hint %q does not say Git holds it encrypted", o.Ref(), f.Path, f.Hint)
			}
		}
	}
	noneOf(t, r, "typed-by-hand", "dHlwZWQtYnktaGFuZA")

	// Without decryption the same Git is ciphertext: every encrypted value
	// differs, and is still never shown.
	app := sopsApp(dir)
	app.Decryption = ""
	r = runScan(t, scanConfig(ns, app))
	noneOf(t, r, "typed-by-hand")
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
})

// What kustomize-controller decrypts, driftscan seals; what it leaves, is
// left.
func TestSealSOPS(t *testing.T) {
	enc := func(data string) string {
		return "ENC[AES256_GCM,data:" + data + ",iv:aXY=,tag:dGFn,type:str]"
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	obj := func(manifest string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	t.Run("a file sops encrypted", func(t *testing.T) {
		u := obj(`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {a: "` + enc("AAA") + `", b: "` + enc("BBB") + `", plain: cGxhaW4=}, stringData: {c: "` + enc("CCC") + `"}, sops: {mac: "` + enc("MAC") + `"}}`)
		sealSOPS(u)
		if _, ok := u.Object["sops"]; ok {
			t.Errorf("the sops metadata is still there")
		}
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		sd, _, _ := unstructured.NestedStringMap(u.Object, "stringData")
		a, _ := base64.StdEncoding.DecodeString(data["a"])
		if !strings.HasPrefix(string(a), sealedPrefix) || !isSealed(data["a"]) || !isSealed(sd["c"]) || !strings.HasPrefix(sd["c"], sealedPrefix) {
			t.Errorf("data %v stringData %v: want the data sealed in base64, stringData sealed as text", data, sd)
		}
		if data["a"] == data["b"] {
			t.Errorf("two ciphertexts, one marker: a new ciphertext must read as a new value")
		}
		if data["plain"] != "cGxhaW4=" {
			t.Errorf("a value sops left plain became %q", data["plain"])
		}
	})
	t.Run("a Secret's data entry that is a SOPS file", func(t *testing.T) {
		u := obj(`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {env: "` + b64("TOKEN="+enc("x")+"\nsops_mac="+enc("m")+"\n") + `", other: "` + b64("plain") + `"}}`)
		sealSOPS(u)
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		if !isSealed(data["env"]) || data["other"] != b64("plain") {
			t.Errorf("data %v: want the SOPS file sealed and the other entry left", data)
		}
	})
	for name, manifest := range map[string]string{
		"decryption disabled": `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {kustomize.toolkit.fluxcd.io/decrypt: Disabled}}, data: {a: "` + enc("AAA") + `"}, sops: {mac: "` + enc("MAC") + `"}}`,
		"no mac":              `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "` + enc("AAA") + `"}, sops: {version: 3.13.2}}`,
		"not encrypted":       `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "ENC[not sops]"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			u := obj(manifest)
			before := u.DeepCopy()
			sealSOPS(u)
			if diff := cmp.Diff(before.Object, u.Object); diff != "" {
				t.Errorf("kustomize-controller leaves it as Git holds it (-git +sealed):\n%s", diff)
			}
		})
	}
}

// A kustomization that generates Secrets from SOPS-encrypted env and YAML
// files, as Flux's guide has it: kustomize-controller decrypts the files
// before the build. Without a hash suffix each value is compared by who
// wrote it; with one, the name is a hash of values only the key reveals:
// a warning, not a Missing Secret.
func TestSecretsGeneratedFromSOPSFiles(t *testing.T) {
	ns := env.Namespace(t, nil)
	key := sops.NewKey(t)
	plain := map[string]string{
		"kustomization.yaml": `secretGenerator:
- name: token
  envs: [token.env]
- name: fixed
  envs: [fixed.env]
  options: {disableNameSuffixHash: true}
- name: file
  files: [config.yaml]
  options: {disableNameSuffixHash: true}
resources: [deploy.yaml]
`,
		// kustomize rewrites its references to the hashed Secret.
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        envFrom: [{secretRef: {name: token}}]
      volumes: [{name: token, secret: {secretName: token}}]
`,
		"token.env":   "TOKEN=sops-plain-token\n",
		"fixed.env":   "USER=app\nPASSWORD=sops-plain-password\n",
		"config.yaml": "user: app\npassword: sops-plain-config\n",
	}
	encrypted, decrypted := t.TempDir(), t.TempDir()
	for name, text := range plain {
		enc := text
		if name != "kustomization.yaml" && name != "deploy.yaml" {
			enc = sops.EncryptFile(t, key, name, text)
			if got := sops.DecryptFile(t, key, name, enc); got != text {
				t.Fatalf("sops decrypts %s to %q, want %q", name, got, text)
			}
		}
		if err := os.WriteFile(filepath.Join(encrypted, name), []byte(enc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(decrypted, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What kustomize-controller applies: the build of the decrypted files.
	mfs, err := render.Manifests(t.Context(), render.Options{Dir: decrypted, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, mf := range mfs {
		if err := appliedAs(config.AppliedAsFlux, mf.Object); err != nil {
			t.Fatal(err)
		}
		env.Apply(t, "kustomize-controller", ns, mf.Object)
		live[mf.Object.GetName()] = true
	}

	r := runScan(t, scanConfig(ns, sopsApp(encrypted)), func(o *Options) { o.ExplainDismissed = true })
	if got := rows(r); len(got) != 0 {
		t.Errorf("want no finding, got\n%s", dump(got))
	}
	// The Deployment names the hashed Secret (Git: the hash of the
	// ciphertext; live: of the values): in sync, its two references
	// dismissed as encrypted.
	want := map[string]report.Status{"Secret/fixed": report.StatusInSync, "Secret/file": report.StatusInSync, "Deployment/web": report.StatusInSync}
	if diff := cmp.Diff(want, statuses(r)); diff != "" {
		t.Errorf("statuses (-want +got): the hashed one is not compared, the others are\n%s", diff)
	}
	var ws []string
	for _, w := range r.Warnings {
		ws = append(ws, string(w.Code)+" "+w.Object)
	}
	if len(ws) != 1 || !strings.HasPrefix(ws[0], "EncryptedNameSkipped Secret/"+ns+"/token-") || live[strings.TrimPrefix(ws[0], "EncryptedNameSkipped Secret/"+ns+"/")] {
		t.Errorf("warnings %v: want one EncryptedNameSkipped for the token Secret Git names by its ciphertext (live: %v)", ws, live)
	}
	n := 0
	for _, o := range r.Apps[0].Objects {
		for _, d := range o.Dismissed {
			if d.Reason == report.Encrypted {
				n++
			}
		}
	}
	// USER, PASSWORD and config.yaml; the sops_* entries of the env file
	// are gone, as kustomize-controller decrypts the file; the
	// Deployment's secretRef and secretName.
	if n != 5 {
		t.Errorf("%d values dismissed as encrypted, want 5:\n%s", n, dump(r.Apps[0].Objects))
	}

	// A person points the Deployment at another Secret: drift, named.
	if _, err := env.UpdateAs(t.Context(), "kubectl-edit", cluster.Deployment, ns, "web", func(u *unstructured.Unstructured) {
		vols, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "volumes")
		vols[0].(map[string]any)["secret"].(map[string]any)["secretName"] = "other"
		_ = unstructured.SetNestedSlice(u.Object, vols, "spec", "template", "spec", "volumes")
	}); err != nil {
		t.Fatal(err)
	}
	var got []report.Finding
	for _, o := range runScan(t, scanConfig(ns, sopsApp(encrypted))).Apps[0].Objects {
		got = append(got, o.Findings...)
	}
	if len(got) != 1 || got[0].Manager != "kubectl-edit" || got[0].Live != "other" || !strings.Contains(got[0].Hint, "hash suffix only the key reveals") {
		t.Errorf("want one finding by kubectl-edit on the Secret's name, with the hint; got\n%s", dump(got))
	}
	data, _ := json.Marshal(r)
	for _, s := range sops.Leaks {
		if strings.Contains(string(data), s) {
			t.Errorf("the report holds %q", s)
		}
	}
}

// FuzzSealSOPS: Git's objects are anyone's; sealing never panics, and an
// object kustomize-controller would decrypt keeps no ciphertext and no
// sops metadata.
func FuzzSealSOPS(f *testing.F) {
	enc := "ENC[AES256_GCM,data:QQ==,iv:aXY=,tag:dGFn,type:str]"
	f.Add([]byte(`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {a: "` + enc + `"}, stringData: {b: [{c: "` + enc + `"}]}, sops: {mac: "` + enc + `"}}`))
	f.Add([]byte(`{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {T: "` + base64.StdEncoding.EncodeToString([]byte(enc)) + `", sops_mac: "` + base64.StdEncoding.EncodeToString([]byte(enc)) + `"}}`))
	f.Add([]byte(`{apiVersion: v1, kind: ConfigMap, metadata: {annotations: {kustomize.toolkit.fluxcd.io/decrypt: disabled}}, data: {a: "` + enc + `"}, sops: {mac: x}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		u := &unstructured.Unstructured{}
		if yaml.Unmarshal(data, &u.Object) != nil || u.Object == nil {
			return
		}
		md, _ := u.Object["sops"].(map[string]any)
		decrypts := md != nil && md["mac"] != nil && md["mac"] != "" && !strings.EqualFold(u.GetAnnotations()[decryptDisabled], "disabled")
		sealSOPS(u)
		if !decrypts {
			return
		}
		if _, ok := u.Object["sops"]; ok {
			t.Errorf("the sops metadata is still there")
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				if sopsValue.MatchString(v) {
					t.Errorf("ciphertext %q left", v)
				}
			case map[string]any:
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(u.Object)
	})
}
