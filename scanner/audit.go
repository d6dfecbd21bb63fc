package scanner

import (
	"context"
	"path/filepath"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/calricon/driftscan/audit"
	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/report"
)

// auditPaths returns the audit inputs of the config (relative to its
// folder) and of the options.
func (s *scan) auditPaths() []string {
	var out []string
	if s.cfg.Audit != nil {
		for _, f := range s.cfg.Audit.Files {
			if f != "-" && !filepath.IsAbs(f) && s.cfg.Dir != "" {
				f = filepath.Join(s.cfg.Dir, f)
			}
			out = append(out, f)
		}
	}
	return append(out, s.opts.AuditLogs...)
}

// readAudit starts reading the audit log, keeping only events on the
// objects Git declares, while the scan lists the cluster. The returned
// function waits for it.
func (s *scan) readAudit(ctx context.Context) func() *audit.Index {
	paths := s.auditPaths()
	if len(paths) == 0 {
		return func() *audit.Index { return nil }
	}
	keep := map[audit.ObjectRef]bool{}
	for _, d := range s.objects {
		keep[audit.ObjectRef{Group: d.mapping.Resource.Group, Resource: d.mapping.Resource.Resource, Namespace: d.key.ns, Name: d.key.name}] = true
	}
	opts := audit.DefaultOptions()
	opts.Paths, opts.Stdin = paths, s.opts.AuditStdin
	opts.Keep = func(o audit.ObjectRef) bool { return keep[o] }
	done := make(chan *audit.Index, 1)
	go func() { done <- audit.Read(ctx, opts) }()
	return func() *audit.Index { return <-done }
}

// attribute names who made one change, from the audit log.
func (s *scan) attribute(d desired, cl *classify.Classifier, obj classify.Object, ch change, owner *classify.Entry) *report.Attribution {
	q := audit.Query{
		Object:    audit.ObjectRef{Group: d.mapping.Resource.Group, Resource: d.mapping.Resource.Resource, Namespace: obj.Namespace, Name: obj.Name},
		Path:      auditPath(ch.Path),
		Type:      ch.Type,
		Injected:  ch.Type == report.TypeAdded && owner == nil && ch.NewKey,
		Webhooks:  obj.Webhooks,
		IsApplier: cl.IsApplier,
		Scale:     owner == nil && isReplicas(ch.Path),
	}
	if owner != nil {
		q.Owner = &audit.Entry{Manager: owner.Manager, Operation: owner.Operation, Subresource: owner.Subresource, Time: owner.Time}
	}
	q.AppliedAt = appliedAt(cl, obj.Entries)
	return s.audit.Attribute(q)
}

// isReplicas reports whether p is spec.replicas, which a request through
// the scale subresource writes.
func isReplicas(p fieldpath.Path) bool {
	return len(p) == 2 && p[0].FieldName != nil && *p[0].FieldName == "spec" && p[1].FieldName != nil && *p[1].FieldName == "replicas"
}

// appliedAt is the time of the newest write by an applier.
func appliedAt(cl *classify.Classifier, entries []classify.Entry) time.Time {
	var t time.Time
	for _, e := range entries {
		if cl.IsApplier(e.Manager) && e.Time.After(t) {
			t = e.Time
		}
	}
	return t
}

// auditPath converts a structured-merge-diff path.
func auditPath(p fieldpath.Path) audit.Path {
	out := make(audit.Path, 0, len(p))
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			out = append(out, audit.FieldStep(*pe.FieldName))
		case pe.Key != nil:
			key := map[string]any{}
			for _, f := range *pe.Key {
				key[f.Name] = f.Value.Unstructured()
			}
			out = append(out, audit.KeyStep(key))
		case pe.Value != nil:
			out = append(out, audit.ValueStep((*pe.Value).Unstructured()))
		case pe.Index != nil:
			out = append(out, audit.IndexStep(*pe.Index))
		}
	}
	return out
}

// auditReport adds what reading the audit log met to the report.
func (s *scan) auditReport() {
	if s.audit == nil {
		return
	}
	st := s.audit.Stats()
	s.r.Stats.Audit = &st
	for _, w := range s.audit.Warnings() {
		s.warn(report.Warning{Code: report.WarnAuditLogUnreadable, Message: w})
	}
}
