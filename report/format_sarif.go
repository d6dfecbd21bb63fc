package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/owenrumney/go-sarif/v2/sarif"
)

// SARIF output is for GitHub code scanning and other SARIF 2.1.0 readers.
// It is built with github.com/owenrumney/go-sarif (what trivy and tfsec use).
// Two things that library leaves to the caller matter for a valid log:
// a result's ruleIndex is looked up when the result is added, so every rule
// is added first; and a suppression marshals its status, guid and location
// as null unless set, which the schema rejects, so all three are always set.

const (
	sarifToolName = "driftscan"
	sarifToolURI  = "https://github.com/calricon/driftscan"
	// sarifSchemaURI is the OASIS schema testdata/sarif-schema-2.1.0.json
	// copies.
	sarifSchemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	// sarifFingerprintKey names the partial fingerprint GitHub matches
	// results across uploads by; bump the version if its input changes.
	sarifFingerprintKey = "driftscanFinding/v1"
)

// sarifRule describes one rule: a class of drift, or a missing or extra
// object.
type sarifRule struct {
	id, name, level, short, help string
}

// sarifClassRules has one rule per class, in report order. Levels: a change a
// person made, or one nobody can explain, is an error; a pipeline that
// bypassed Git is a warning; controllers and webhooks doing their job are
// notes.
var sarifClassRules = map[Class]sarifRule{
	ClassWebhook: {
		id: "drift/webhook", name: "DriftByWebhook", level: "note",
		short: "A mutating admission webhook added or changed a field of the live object.",
		help: "The field was written at admission by a mutating webhook (a sidecar injector, a policy engine), so no field manager owns it. " +
			"This is usually expected. Declare the field in Git, or ignore it with a jsonPointers or jqPathExpressions rule: " +
			"a managedFieldsManagers rule cannot match a webhook, because a webhook owns nothing.",
	},
	ClassOperator: {
		id: "drift/operator", name: "DriftByOperator", level: "note",
		short: "A controller or operator owns a field that Git also declares.",
		help: "A controller (for example the HorizontalPodAutoscaler, writing through the scale subresource) changed this field and owns it now. " +
			"Leave the field out of Git so Git and the controller stop fighting over it, or ignore it with a managedFieldsManagers rule naming the controller.",
	},
	ClassPipeline: {
		id: "drift/pipeline", name: "DriftByPipeline", level: "warning",
		short: "A CI/CD pipeline applied a value that is not in Git.",
		help: "A deployment tool other than the GitOps controller wrote this field, bypassing Git. " +
			"Make the pipeline commit its change to Git instead of applying it, or update Git to the value the pipeline set.",
	},
	ClassHuman: {
		id: "drift/human", name: "DriftByHuman", level: "error",
		short: "Someone changed the live object by hand.",
		help: "A person changed this field with kubectl (edit, patch, scale, set) or a console. The result names the field manager and when it wrote. " +
			"Copy the change to Git if it should stay, or let the GitOps controller put the Git value back.",
	},
	ClassUnknown: {
		id: "drift/unknown", name: "DriftByUnknownActor", level: "error",
		short: "A field differs from Git and driftscan could not tell who changed it.",
		help: "The field manager that owns this field is not one driftscan recognises, or none owns it. " +
			"Find out who runs the manager named in the result, then fix Git or the actor, and teach driftscan the manager with a classification rule.",
	},
}

var (
	sarifMissingRule = sarifRule{
		id: "object/missing", name: "ObjectMissing", level: "error",
		short: "An object declared in Git does not exist in the cluster.",
		help:  "Git declares this object but the cluster has none: it was deleted by hand, or it was never applied. Apply it again, or remove it from Git.",
	}
	sarifExtraRule = sarifRule{
		id: "object/extra", name: "ObjectExtra", level: "warning",
		short: "An object carries the app's tracking label but is not in Git.",
		help:  "The cluster has an object labelled as part of this app that Git does not declare: it was created by hand, or removed from Git without being pruned. Add it to Git, or delete it.",
	}
)

func writeSARIF(w io.Writer, r *Report, opts WriteOptions) error {
	log, err := sarif.New(sarif.Version210, false)
	if err != nil {
		return err
	}
	log.Schema = sarifSchemaURI

	run := sarif.NewRunWithInformationURI(sarifToolName, sarifToolURI)
	for _, c := range Classes {
		run.Tool.Driver.AddRule(sarifClassRules[c].descriptor())
	}
	run.Tool.Driver.AddRule(sarifMissingRule.descriptor())
	run.Tool.Driver.AddRule(sarifExtraRule.descriptor())
	run.AutomationDetails = &sarif.RunAutomationDetails{ID: ptr(sarifToolName + "/" + r.Cluster + "/")}
	run.Properties = sarif.Properties{"cluster": r.Cluster, "scannedAt": r.ScannedAt.UTC().Format("2006-01-02T15:04:05Z")}

	width := opts.valueWidth()
	var notes []*sarif.Notification
	for _, app := range r.Apps {
		if app.Error != "" {
			notes = append(notes, sarifNotification(fmt.Sprintf("app %s: %s", app.Name, app.Error), nil))
		}
		for _, o := range app.Objects {
			loc := sarifLocation(app, o)
			switch o.Status {
			case StatusMissing:
				run.AddResult(sarifObjectResult(r, app, o, sarifMissingRule, loc))
			case StatusExtra:
				run.AddResult(sarifObjectResult(r, app, o, sarifExtraRule, loc))
			case StatusError:
				notes = append(notes, sarifNotification(fmt.Sprintf("app %s: %s: %s", app.Name, o.Ref(), o.Error), loc))
			}
			for _, f := range o.Findings {
				run.AddResult(sarifFindingResult(r, app, o, f, loc, width))
			}
		}
	}
	for _, e := range r.Errors {
		notes = append(notes, sarifNotification(e, nil))
	}
	for _, w := range r.Warnings {
		n := &sarif.Notification{Level: "warning", Message: sarif.NewTextMessage(warningText(w))}
		n.Properties = sarif.Properties{"code": string(w.Code)}
		if w.App != "" {
			n.Properties["app"] = w.App
		}
		if w.Object != "" {
			n.Properties["object"] = w.Object
		}
		notes = append(notes, n)
	}
	run.Invocations = []*sarif.Invocation{{
		ExecutionSuccessful:        ptr(!r.HasErrors()),
		ToolExecutionNotifications: notes,
	}}
	log.AddRun(run)

	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

func (sr sarifRule) descriptor() *sarif.ReportingDescriptor {
	return sarif.NewRule(sr.id).
		WithName(sr.name).
		WithDescription(sr.short).
		WithFullDescription(sarif.NewMultiformatMessageString(sr.help)).
		WithTextHelp(sr.help).
		WithDefaultConfiguration(&sarif.ReportingConfiguration{Level: sr.level}).
		WithProperties(sarif.Properties{"tags": []string{"drift", "kubernetes", "gitops"}})
}

// sarifLocation points at the manifest in Git that declares the object
// (the app's source folder for rendered Helm and Kustomize output, and for
// an Extra object, which Git does not declare), with the object's ref as
// its logical location.
func sarifLocation(app App, o Object) *sarif.Location {
	p := app.ManifestPath(o)
	if p == "" {
		p = app.ManifestPath(Object{File: "."})
	}
	phys := sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation((&url.URL{Path: p}).EscapedPath()))
	if o.Line > 0 {
		phys = phys.WithRegion(sarif.NewRegion().WithStartLine(o.Line))
	}
	logical := sarif.NewLogicalLocation().WithName(o.Name).WithFullyQualifiedName(o.Ref()).WithKind("resource")
	return sarif.NewLocationWithPhysicalLocation(phys).WithLogicalLocations([]*sarif.LogicalLocation{logical})
}

func sarifFindingResult(r *Report, app App, o Object, f Finding, loc *sarif.Location, width int) *sarif.Result {
	rule, ok := sarifClassRules[f.Class]
	if !ok {
		rule = sarifClassRules[ClassUnknown]
	}
	text := fmt.Sprintf("%s (app %s): %s %s by %s: git %s → live %s.",
		o.Ref(), app.Name, f.Path, f.Type, diffBy(f), sarifValue(f.Git, width), sarifValue(f.Live, width))
	if f.Hint != "" {
		text += " Hint: " + f.Hint
	}
	res := sarif.NewRuleResult(rule.id).
		WithLevel(rule.level).
		WithMessage(sarif.NewTextMessage(text)).
		WithLocations([]*sarif.Location{loc}).
		WithPartialFingerPrints(map[string]interface{}{sarifFingerprintKey: sarifFingerprint(r.Cluster, app.Name, o.Ref(), f.Path)})
	props := sarif.Properties{
		"cluster": r.Cluster, "app": app.Name, "object": o.Ref(), "apiVersion": o.APIVersion,
		"path": f.Path, "pointer": f.Pointer, "type": string(f.Type), "class": string(f.Class),
		"manager": f.Manager, "operation": f.Operation, "subresource": f.Subresource, "time": f.Time,
		"git": f.Git, "live": f.Live,
	}
	if f.Actor != "" {
		props["actor"] = f.Actor
	}
	if f.Attribution != nil {
		props["attribution"] = f.Attribution
	}
	res.Properties = props
	if f.Ignored {
		fp := sarifFingerprint(r.Cluster, app.Name, o.Ref(), f.Path)
		res.AddSuppression(sarif.NewSuppression("external").
			WithStatus("accepted").
			WithJustifcation(ignoredText(f)).
			WithGuid(sarifGUID(fp)).
			WithLocation(loc))
	}
	return res
}

func sarifObjectResult(r *Report, app App, o Object, rule sarifRule, loc *sarif.Location) *sarif.Result {
	text := fmt.Sprintf("%s (app %s): %s: %s.", o.Ref(), app.Name, o.Status, statusText(o))
	res := sarif.NewRuleResult(rule.id).
		WithLevel(rule.level).
		WithMessage(sarif.NewTextMessage(text)).
		WithLocations([]*sarif.Location{loc}).
		WithPartialFingerPrints(map[string]interface{}{sarifFingerprintKey: sarifFingerprint(r.Cluster, app.Name, o.Ref(), "")})
	res.Properties = sarif.Properties{"cluster": r.Cluster, "app": app.Name, "object": o.Ref(), "apiVersion": o.APIVersion, "status": string(o.Status)}
	return res
}

func sarifNotification(msg string, loc *sarif.Location) *sarif.Notification {
	n := &sarif.Notification{Level: "error", Message: sarif.NewTextMessage(msg)}
	if loc != nil {
		n.Locations = []*sarif.Location{loc}
	}
	return n
}

// sarifValue quotes a value for a message, cut at width; absent is <none>.
func sarifValue(v string, width int) string {
	if v == "" {
		return none
	}
	return `"` + cut(oneLine(v), width) + `"`
}

// sarifFingerprint identifies a finding across scans: the same field of the
// same object of the same app in the same cluster. Values and managers are
// left out so a finding keeps its identity while it changes.
func sarifFingerprint(cluster, app, ref, path string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{cluster, app, ref, path}, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// sarifGUID turns a fingerprint into a stable GUID of the form the SARIF
// schema asks for (version 5, RFC 4122 variant).
func sarifGUID(fingerprint string) string {
	sum := sha256.Sum256([]byte("suppression\x00" + fingerprint))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func ptr[T any](v T) *T { return &v }
