package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// sarifSchemaFile is the OASIS SARIF 2.1.0 schema (errata01, as published in
// oasis-tcs/sarif-spec Schemata/sarif-schema-2.1.0.json), shipped so the
// test needs no network.
const sarifSchemaFile = "testdata/sarif-schema-2.1.0.json"

func compileSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(sarifSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("read %s: %v", sarifSchemaFile, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(sarifSchemaURI, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(sarifSchemaURI)
	if err != nil {
		t.Fatalf("compile SARIF schema: %v", err)
	}
	return sch
}

func validateSARIF(t *testing.T, sch *jsonschema.Schema, out []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("SARIF output is not JSON: %v", err)
	}
	return sch.Validate(inst)
}

func TestSARIFIsValidAgainstTheSchema(t *testing.T) {
	sch := compileSARIFSchema(t)
	for _, opts := range []WriteOptions{DefaultWriteOptions(), {Wide: true}} {
		if err := validateSARIF(t, sch, render(t, FormatSARIF, opts)); err != nil {
			t.Errorf("SARIF output (wide=%v) is not valid SARIF 2.1.0:\n%v", opts.Wide, err)
		}
	}
	empty := New(loadFixture(t).ScannedAt, "empty")
	empty.Finalize()
	var buf bytes.Buffer
	if err := Write(&buf, FormatSARIF, empty, DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	if err := validateSARIF(t, sch, buf.Bytes()); err != nil {
		t.Errorf("SARIF for an empty report is not valid:\n%v", err)
	}
}

func TestSARIFSchemaRejectsWhatGitHubWould(t *testing.T) {
	// The schema check is only worth something if it can fail: a region
	// with startLine 0 (the reason Line 0 must omit the region) and a null
	// suppression status (what go-sarif writes when it is not set).
	sch := compileSARIFSchema(t)
	for name, mutate := range map[string]func(result map[string]any){
		"startLine 0": func(res map[string]any) {
			loc := res["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)
			loc["region"] = map[string]any{"startLine": 0}
		},
		"null suppression status": func(res map[string]any) {
			res["suppressions"] = []any{map[string]any{"kind": "external", "status": nil}}
		},
	} {
		var doc map[string]any
		if err := json.Unmarshal(render(t, FormatSARIF, DefaultWriteOptions()), &doc); err != nil {
			t.Fatal(err)
		}
		mutate(doc["runs"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any))
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if validateSARIF(t, sch, out) == nil {
			t.Errorf("schema accepts a result with %s", name)
		}
	}
}

// sarifLog is the part of a SARIF log the tests read.
type sarifLog struct {
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name           string `json:"name"`
				InformationURI string `json:"informationUri"`
				Rules          []struct {
					ID                   string `json:"id"`
					DefaultConfiguration struct {
						Level string `json:"level"`
					} `json:"defaultConfiguration"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Invocations []struct {
			ExecutionSuccessful        bool  `json:"executionSuccessful"`
			ToolExecutionNotifications []any `json:"toolExecutionNotifications"`
		} `json:"invocations"`
		Results []struct {
			RuleID    string `json:"ruleId"`
			RuleIndex int    `json:"ruleIndex"`
			Level     string `json:"level"`
			Message   struct {
				Text string `json:"text"`
			} `json:"message"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI string `json:"uri"`
					} `json:"artifactLocation"`
					Region *struct {
						StartLine int `json:"startLine"`
					} `json:"region"`
				} `json:"physicalLocation"`
				LogicalLocations []struct {
					FullyQualifiedName string `json:"fullyQualifiedName"`
				} `json:"logicalLocations"`
			} `json:"locations"`
			PartialFingerprints map[string]string `json:"partialFingerprints"`
			Suppressions        []struct {
				Kind          string `json:"kind"`
				Justification string `json:"justification"`
			} `json:"suppressions"`
		} `json:"results"`
	} `json:"runs"`
}

func readSARIF(t *testing.T, out []byte) sarifLog {
	t.Helper()
	var l sarifLog
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Runs) != 1 {
		t.Fatalf("got %d runs, want 1", len(l.Runs))
	}
	return l
}

func TestSARIFRulesResultsAndLocations(t *testing.T) {
	log := readSARIF(t, render(t, FormatSARIF, DefaultWriteOptions()))
	run := log.Runs[0]
	if d := run.Tool.Driver; d.Name != "driftscan" || d.InformationURI == "" {
		t.Errorf("driver = %q %q, want driftscan with an informationUri", d.Name, d.InformationURI)
	}
	levels := map[string]string{}
	var ruleIDs []string
	for _, r := range run.Tool.Driver.Rules {
		ruleIDs = append(ruleIDs, r.ID)
		levels[r.ID] = r.DefaultConfiguration.Level
	}
	wantRules := []string{"drift/webhook", "drift/operator", "drift/pipeline", "drift/human", "drift/unknown", "object/missing", "object/extra"}
	if diff := cmp.Diff(wantRules, ruleIDs); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	wantLevels := map[string]string{"drift/webhook": "note", "drift/operator": "note", "drift/pipeline": "warning", "drift/human": "error", "drift/unknown": "error"}
	for id, want := range wantLevels {
		if levels[id] != want {
			t.Errorf("rule %s level = %q, want %q", id, levels[id], want)
		}
	}

	type result struct {
		Rule, Level, URI string
		Line             int
		Object           string
		Suppressed       bool
	}
	var got []result
	fingerprints := map[string]bool{}
	for _, r := range run.Results {
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s has ruleIndex %d, which is %s", r.RuleID, r.RuleIndex, run.Tool.Driver.Rules[r.RuleIndex].ID)
		}
		if len(r.Locations) != 1 || len(r.Locations[0].LogicalLocations) != 1 {
			t.Fatalf("result %q: want one location with one logical location", r.Message.Text)
		}
		loc := r.Locations[0]
		line := 0
		if loc.PhysicalLocation.Region != nil {
			line = loc.PhysicalLocation.Region.StartLine
		}
		got = append(got, result{r.RuleID, r.Level, loc.PhysicalLocation.ArtifactLocation.URI, line, loc.LogicalLocations[0].FullyQualifiedName, len(r.Suppressions) > 0})
		fp := r.PartialFingerprints[sarifFingerprintKey]
		if fp == "" || fingerprints[fp] {
			t.Errorf("result %q: partial fingerprint %q is empty or not unique", r.Message.Text, fp)
		}
		fingerprints[fp] = true
	}
	want := []result{
		{"drift/operator", "note", "apps/billing/overlays/prod", 0, "Deployment/billing/billing-api", false},
		{"drift/human", "error", "apps/billing/overlays/prod", 0, "Secret/billing/billing-db", false},
		{"object/extra", "warning", "apps/billing/overlays/prod", 0, "Service/billing/billing-legacy", false},
		{"drift/unknown", "error", "apps/web/deployment.yaml", 1, "Deployment/web/frontend", false},
		{"drift/human", "error", "apps/web/deployment.yaml", 1, "Deployment/web/frontend", true},
		{"drift/human", "error", "apps/web/deployment.yaml", 1, "Deployment/web/frontend", false},
		{"drift/pipeline", "warning", "apps/web/deployment.yaml", 1, "Deployment/web/frontend", false},
		{"drift/webhook", "note", "apps/web/deployment.yaml", 1, "Deployment/web/frontend", false},
		{"object/missing", "error", "apps/web/ingress.yaml", 12, "Ingress/web/frontend", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	for _, r := range run.Results {
		for _, s := range r.Suppressions {
			if s.Kind != "external" || !strings.Contains(s.Justification, "rollout restarts are expected") {
				t.Errorf("suppression = %+v, want kind external with the rule's reason", s)
			}
		}
	}
	image := run.Results[5].Message.Text
	for _, part := range []string{"Deployment/web/frontend", `.spec.template.spec.containers[name="app"].image`, "Changed", "kubectl-set", `"ghcr.io/acme/web:1.4.2" → live "ghcr.io/acme/web:1.4.3-hotfix"`} {
		if !strings.Contains(image, part) {
			t.Errorf("message %q does not name %q", image, part)
		}
	}

	inv := run.Invocations
	if len(inv) != 1 || inv[0].ExecutionSuccessful || len(inv[0].ToolExecutionNotifications) != 5 {
		t.Fatalf("invocations = %+v, want one, unsuccessful, with the 3 errors and 2 warnings as notifications", inv)
	}
	byLevel := map[string][]string{}
	for _, n := range inv[0].ToolExecutionNotifications {
		m, _ := n.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		code, _ := props["code"].(string)
		level, _ := m["level"].(string)
		byLevel[level] = append(byLevel[level], code)
	}
	wantCodes := map[string][]string{"error": {"", "", ""}, "warning": {"WebhooksUnreadable", "AutoscalersUnreadable"}}
	if diff := cmp.Diff(wantCodes, byLevel); diff != "" {
		t.Errorf("notification levels and codes (-want +got):\n%s", diff)
	}
}

func TestSARIFFingerprintIgnoresValuesAndManager(t *testing.T) {
	a := loadFixture(t)
	b := loadFixture(t)
	f := &b.Apps[2].Objects[2].Findings[2]
	f.Live, f.Manager, f.Time = "ghcr.io/acme/web:9.9.9", "kubectl-edit", "2026-07-01T11:59:00Z"
	fa := readSARIF(t, mustWrite(t, FormatSARIF, a)).Runs[0].Results[5].PartialFingerprints
	fb := readSARIF(t, mustWrite(t, FormatSARIF, b)).Runs[0].Results[5].PartialFingerprints
	if diff := cmp.Diff(fa, fb); diff != "" {
		t.Errorf("fingerprint changed with the live value and manager (-before +after):\n%s", diff)
	}
	b.Cluster = "prod-us-1"
	fc := readSARIF(t, mustWrite(t, FormatSARIF, b)).Runs[0].Results[5].PartialFingerprints
	if cmp.Equal(fa, fc) {
		t.Error("fingerprint is the same in another cluster")
	}
}

func TestSARIFGUIDHasTheSchemaForm(t *testing.T) {
	g := sarifGUID(sarifFingerprint("c", "a", "Kind/ns/name", ".spec"))
	if len(g) != 36 || g[14] != '5' || !strings.ContainsRune("89ab", rune(g[19])) {
		t.Errorf("sarifGUID = %q, want a version-5 RFC 4122 GUID", g)
	}
	if g != sarifGUID(sarifFingerprint("c", "a", "Kind/ns/name", ".spec")) {
		t.Error("sarifGUID is not stable")
	}
}

func mustWrite(t *testing.T, f Format, r *Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f, r, DefaultWriteOptions()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
