package notify

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/calricon/driftscan/report"
)

// StateAPIVersion and StateKind identify a saved State.
const (
	StateAPIVersion = "driftscan.dev/v1alpha1"
	StateKind       = "NotifyState"
)

// Channel is where a notification goes.
type Channel string

// The channels.
const (
	ChannelSlack     Channel = "slack"
	ChannelPagerDuty Channel = "pagerduty"
)

// Store keeps the State between scans.
//
// Load never returns a nil State without an error. When the stored state is
// corrupt, Load starts from an empty State and returns it with a
// *CorruptStateError, so a run still notifies (at worst once more): a
// ConfigMapStore resets it in place, a FileStore keeps the file aside.
//
// Check says, before anything is sent, whether s (the state as it will be
// once every planned notification is accepted) could be saved, and how
// much of the store it would take; it writes nothing. A run that could not
// save what it sent would send it again on every run.
//
// Save writes the changes made to the State since it was loaded. When
// another scan saved in between, Save applies those changes on top of what
// that scan saved instead of replacing it.
type Store interface {
	Load(ctx context.Context) (*State, error)
	Check(ctx context.Context, s *State) (Usage, error)
	Save(ctx context.Context, s *State) error
}

// CorruptStateError says the stored state could not be read, and was reset
// (Content holds what it was, for one log line) or kept aside (KeptAs).
type CorruptStateError struct {
	// Ref is the state's place ("configmap:ns/name", "file:path").
	Ref string
	// KeptAs is where the unreadable content is now, when it was kept.
	KeptAs string
	// Content is the unreadable content, cut short, when it was reset in
	// place instead.
	Content string
	Err     error
}

func (e *CorruptStateError) Error() string {
	if e.KeptAs != "" {
		return fmt.Sprintf("state %s is not a readable %s (kept aside as %s, starting empty): %v", e.Ref, StateKind, e.KeptAs, e.Err)
	}
	return fmt.Sprintf("state %s was not a readable %s and was reset to an empty state (its content is in the log): %v", e.Ref, StateKind, e.Err)
}

func (e *CorruptStateError) Unwrap() error { return e.Err }

// State remembers, per object and channel, which drift was already told and
// where. Use Get, Record and Forget: they keep the journal Save needs to
// merge with a concurrent scan.
type State struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Objects    []Entry `json:"objects"`
	// journal lists the changes since Load, in order.
	journal []change
}

// Key names one object of one app in one cluster. The API group stands in
// for the apiVersion, so a version bump in Git keeps the same incident.
type Key struct {
	Cluster   string `json:"cluster"`
	App       string `json:"app"`
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// KeyOf returns the key of o in app of cluster.
func KeyOf(cluster, app string, o report.Object) Key {
	group := ""
	if i := strings.LastIndex(o.APIVersion, "/"); i >= 0 {
		group = o.APIVersion[:i]
	}
	return Key{Cluster: cluster, App: app, Group: group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// Ref is the object as kubectl names it: Kind[.group]/namespace/name.
func (k Key) Ref() string {
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	if k.Namespace == "" {
		return kind + "/" + k.Name
	}
	return kind + "/" + k.Namespace + "/" + k.Name
}

func (k Key) less(o Key) bool {
	return slices.Compare(
		[]string{k.Cluster, k.App, k.Namespace, k.Group, k.Kind, k.Name},
		[]string{o.Cluster, o.App, o.Namespace, o.Group, o.Kind, o.Name}) < 0
}

// Entry is what was told about one object.
type Entry struct {
	Key
	Slack     *Delivery `json:"slack,omitempty"`
	PagerDuty *Delivery `json:"pagerduty,omitempty"`
}

// Delivery is one accepted notification about an object's drift.
type Delivery struct {
	// Fingerprint identifies the set of drift that was told (see Fingerprint).
	Fingerprint string `json:"fingerprint"`
	// Owner is the owner it was routed to.
	Owner string `json:"owner"`
	// Target is where it went: the Slack channel ("webhook" for an incoming
	// webhook), or for PagerDuty where the routing key is kept
	// ("env:PD_KEY_WEB"); never a secret.
	Target string `json:"target"`
	// DedupKey is the PagerDuty incident's dedup_key.
	DedupKey string    `json:"dedupKey,omitempty"`
	SentAt   time.Time `json:"sentAt"`
}

// change is one journal record: d nil forgets the delivery.
type change struct {
	key Key
	ch  Channel
	d   *Delivery
	at  time.Time
}

// NewState returns an empty State.
func NewState() *State {
	return &State{APIVersion: StateAPIVersion, Kind: StateKind, Objects: []Entry{}}
}

// Get returns the delivery of key on ch, nil when none.
func (s *State) Get(key Key, ch Channel) *Delivery {
	i, ok := s.find(key)
	if !ok {
		return nil
	}
	return s.Objects[i].get(ch)
}

// Record remembers that d was accepted for key on ch.
func (s *State) Record(key Key, ch Channel, d Delivery) {
	s.journal = append(s.journal, change{key: key, ch: ch, d: &d, at: d.SentAt})
	s.apply(key, ch, &d)
}

// Forget drops what was told about key on ch, when its resolve was
// accepted at time at.
func (s *State) Forget(key Key, ch Channel, at time.Time) {
	s.journal = append(s.journal, change{key: key, ch: ch, at: at})
	s.apply(key, ch, nil)
}

// Changed reports whether the State has changes that Save would write.
func (s *State) Changed() bool { return len(s.journal) > 0 }

func (e *Entry) get(ch Channel) *Delivery {
	if ch == ChannelPagerDuty {
		return e.PagerDuty
	}
	return e.Slack
}

func (e *Entry) set(ch Channel, d *Delivery) {
	if ch == ChannelPagerDuty {
		e.PagerDuty = d
	} else {
		e.Slack = d
	}
}

func (s *State) find(key Key) (int, bool) {
	return slices.BinarySearchFunc(s.Objects, key, func(e Entry, k Key) int {
		switch {
		case e.Key == k:
			return 0
		case e.Key.less(k):
			return -1
		}
		return 1
	})
}

// apply sets (d non-nil) or drops the delivery of key on ch, keeping
// Objects sorted and dropping entries left with nothing.
func (s *State) apply(key Key, ch Channel, d *Delivery) {
	i, ok := s.find(key)
	if !ok {
		if d == nil {
			return
		}
		s.Objects = slices.Insert(s.Objects, i, Entry{Key: key})
	}
	e := &s.Objects[i]
	if d != nil {
		cp := *d
		d = &cp
	}
	e.set(ch, d)
	if e.Slack == nil && e.PagerDuty == nil {
		s.Objects = slices.Delete(s.Objects, i, i+1)
	}
}

// replay applies s's journal onto base, the state another scan saved since
// s was loaded, and makes s the result. A change loses to a delivery in
// base that was sent later than it: that scan saw newer drift.
func (s *State) replay(base *State) {
	for _, c := range s.journal {
		if cur := base.Get(c.key, c.ch); cur != nil && cur.SentAt.After(c.at) {
			continue
		}
		base.apply(c.key, c.ch, c.d)
	}
	s.APIVersion, s.Kind, s.Objects = base.APIVersion, base.Kind, base.Objects
}

// encode is the saved form: indented JSON, objects sorted.
func (s *State) encode() ([]byte, error) {
	out := struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Objects    []Entry `json:"objects"`
	}{StateAPIVersion, StateKind, s.Objects}
	if out.Objects == nil {
		out.Objects = []Entry{}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// encodeGzip is the compact saved form: JSON without indentation, gzipped.
// The gzip header carries no time, so one state always encodes the same.
func (s *State) encodeGzip() ([]byte, error) {
	objects := s.Objects
	if objects == nil {
		objects = []Entry{}
	}
	data, err := json.Marshal(struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Objects    []Entry `json:"objects"`
	}{StateAPIVersion, StateKind, objects})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// clone is a copy of s without its journal, that Record and Forget can
// change without changing s.
func (s *State) clone() *State {
	return &State{APIVersion: s.APIVersion, Kind: s.Kind, Objects: slices.Clone(s.Objects)}
}

// decodeState parses a saved state. Empty input is an empty state; anything
// that is not a driftscan NotifyState is an error. Unknown fields are
// allowed, so a state a newer driftscan wrote is not taken for corrupt.
func decodeState(data []byte) (*State, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return NewState(), nil
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	if s.APIVersion != StateAPIVersion || s.Kind != StateKind {
		return nil, fmt.Errorf("want apiVersion %s and kind %s, got %q and %q", StateAPIVersion, StateKind, s.APIVersion, s.Kind)
	}
	if s.Objects == nil {
		s.Objects = []Entry{}
	}
	var errs []error
	for i, e := range s.Objects {
		if e.Name == "" || e.Kind == "" || e.App == "" {
			errs = append(errs, fmt.Errorf("objects[%d]: kind, name and app are required", i))
		}
		if e.Slack == nil && e.PagerDuty == nil {
			errs = append(errs, fmt.Errorf("objects[%d]: no delivery", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(s.Objects, func(a, b Entry) int {
		switch {
		case a.Key == b.Key:
			return 0
		case a.Key.less(b.Key):
			return -1
		}
		return 1
	})
	s.Objects = slices.CompactFunc(s.Objects, func(a, b Entry) bool { return a.Key == b.Key })
	return &s, nil
}

// Fingerprint identifies a set of findings by what drifted and who drifted
// it: path, type, class and a hash of the live value, in path order. It
// leaves out times and managers' timestamps, so a scan that finds the same
// drift gets the same fingerprint; "" for no findings. Masked Secret values
// hash as their mask, so a Secret changed again while still differing keeps
// its fingerprint.
func Fingerprint(findings []report.Finding) string {
	if len(findings) == 0 {
		return ""
	}
	lines := make([]string, 0, len(findings))
	for _, f := range findings {
		live := sha256.Sum256([]byte(f.Live))
		lines = append(lines, strings.Join([]string{f.Path, string(f.Type), string(f.Class), hex.EncodeToString(live[:8])}, "\x1f"))
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\x1e")))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// StateRef names where the state is kept: "configmap:NAMESPACE/NAME" or
// "file:PATH".
type StateRef struct {
	// ConfigMap is set for a ConfigMap state.
	Namespace, Name string
	// Path is set for a file state.
	Path string
}

// ParseStateRef parses the --state flag.
func ParseStateRef(s string) (StateRef, error) {
	scheme, rest, ok := strings.Cut(s, ":")
	switch {
	case ok && scheme == "configmap":
		ns, name, ok := strings.Cut(rest, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return StateRef{}, fmt.Errorf("state %q: want configmap:NAMESPACE/NAME", s)
		}
		return StateRef{Namespace: ns, Name: name}, nil
	case ok && scheme == "file":
		if rest == "" {
			return StateRef{}, fmt.Errorf("state %q: want file:PATH", s)
		}
		return StateRef{Path: rest}, nil
	}
	return StateRef{}, fmt.Errorf("state %q: want configmap:NAMESPACE/NAME or file:PATH", s)
}

func (r StateRef) String() string {
	if r.Path != "" {
		return "file:" + r.Path
	}
	return "configmap:" + r.Namespace + "/" + r.Name
}

// Store opens the store r names. client is needed only for a ConfigMap;
// now (nil for time.Now) stamps the names of corrupt states kept aside.
func (r StateRef) Store(client kubernetes.Interface, now func() time.Time) (Store, error) {
	if r.Path != "" {
		return &FileStore{Path: r.Path, Now: now}, nil
	}
	if client == nil {
		return nil, fmt.Errorf("state %s: needs a Kubernetes client", r)
	}
	return &ConfigMapStore{Client: client, Namespace: r.Namespace, Name: r.Name, Now: now}, nil
}

// stamp formats t for the name of a state kept aside: valid in a file name
// and a DNS-1123 object name.
func stamp(now func() time.Time) string {
	if now == nil {
		now = time.Now
	}
	return strings.ToLower(now().UTC().Format("20060102-150405"))
}
