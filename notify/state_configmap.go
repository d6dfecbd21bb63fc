package notify

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// StateBinaryKey is the ConfigMap binaryData key that holds the state, as
// gzipped JSON. StateDataKey is where driftscan kept it before, as
// indented JSON; such a state is read and, at the next save, moved.
const (
	StateBinaryKey = "state.json.gz"
	StateDataKey   = "state.json"
)

// A ConfigMap holds at most 1 MiB of data and binaryData together (the API
// server refuses more). The state warns at half of that.
const (
	configMapLimit = 1 << 20
	stateWarnBytes = configMapLimit / 2
)

// Labels driftscan and the chart put on state ConfigMaps.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelComponent = "app.kubernetes.io/component"
)

// ConfigMapStore keeps the state in one ConfigMap, for scans that run in
// the cluster. It needs only get and update on that ConfigMap (the chart's
// RBAC, by resourceNames); it creates the ConfigMap when it is missing if
// it may, and otherwise says that the chart recreates it on `helm upgrade`.
//
// The state is compact: gzipped JSON under StateBinaryKey, about 40 bytes an
// object (10,000 drifted objects on Slack and PagerDuty are about 400 KiB
// of the 1 MiB a ConfigMap holds). Check reports the size, so a run can
// warn well before the limit and refuse to send what it could not save.
//
// Every write carries the resourceVersion it read
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions),
// so when two scans save at once one gets a Conflict, reads what the other
// saved, applies its own changes on top and tries again.
type ConfigMapStore struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (c *ConfigMapStore) ref() string { return "configmap:" + c.Namespace + "/" + c.Name }

// saveBackoff bounds the conflict retries of Save and Load.
var saveBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: time.Second}

// Load reads the ConfigMap; a missing one, or one without data, is an empty
// state. One whose state cannot be read is reset in place to an empty
// state, with an update (the only write the chart grants), and reported
// with a *CorruptStateError that carries the unreadable content, for the
// caller to log once. A ConfigMap that holds keys of something else is
// not touched: that is an error.
func (c *ConfigMapStore) Load(ctx context.Context) (*State, error) {
	var (
		st      *State
		corrupt *CorruptStateError
	)
	err := retry.OnError(saveBackoff, apierrors.IsConflict, func() error {
		cm, err := c.get(ctx)
		if err != nil || cm == nil {
			st = NewState()
			return err
		}
		if err := foreignKeys(cm); err != nil {
			return err
		}
		s, derr := decodeConfigMap(cm)
		if derr == nil {
			st = s
			return nil
		}
		content := contentOf(cm)
		if err := c.write(ctx, cm, NewState(), metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("reset the unreadable state (%v): %w", derr, err)
		}
		st = NewState()
		corrupt = &CorruptStateError{Ref: c.ref(), Content: content, Err: derr}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", c.ref(), err)
	}
	if corrupt != nil {
		return st, corrupt
	}
	return st, nil
}

// Check says whether s could be saved now, writing nothing: the state it
// would write is within the ConfigMap's limit, and a server-side dry run
// of the update (or of the create, when the ConfigMap is missing) passes
// authorization and validation.
func (c *ConfigMapStore) Check(ctx context.Context, s *State) (Usage, error) {
	data, err := s.encodeGzip()
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Bytes: len(StateBinaryKey) + len(data), Limit: configMapLimit, Objects: len(s.Objects)}
	if u.Bytes > u.Limit {
		return u, fmt.Errorf("state %s would be %d KiB for %d objects, over the %d KiB a ConfigMap holds: split the apps over shards (--shard, the chart's shards), each with its own state", c.ref(), u.Bytes>>10, u.Objects, u.Limit>>10)
	}
	cm, err := c.get(ctx)
	if err != nil {
		return u, fmt.Errorf("state %s: %w", c.ref(), err)
	}
	if cm == nil {
		cm = c.newConfigMap()
		cm.BinaryData = map[string][]byte{StateBinaryKey: data}
		_, err = c.Client.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return u, c.missing(err)
	}
	if err := foreignKeys(cm); err != nil {
		return u, fmt.Errorf("state %s: %w", c.ref(), err)
	}
	err = c.write(ctx, cm, s, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if apierrors.IsConflict(err) {
		err = nil // another scan saved since: Save merges with it
	}
	if err != nil {
		return u, fmt.Errorf("state %s: %w", c.ref(), err)
	}
	return u, nil
}

// missing is the error of creating the state ConfigMap, nil when it was
// created: without the right to create (the chart's RBAC) it says how the
// ConfigMap comes back.
func (c *ConfigMapStore) missing(err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("state %s does not exist and this identity may not create it (the chart creates it: `helm upgrade` the release to recreate it): %w", c.ref(), err)
	}
	if err != nil {
		return fmt.Errorf("state %s: create: %w", c.ref(), err)
	}
	return nil
}

// Save applies s's changes to the ConfigMap as it is now and writes it
// with the resourceVersion it read, again on a conflict. With no changes
// it writes nothing. When the ConfigMap had become unreadable since Load,
// it is reset and the *CorruptStateError returned with the state saved.
func (c *ConfigMapStore) Save(ctx context.Context, s *State) error {
	if !s.Changed() {
		return nil
	}
	var corrupt *CorruptStateError
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(saveBackoff, retriable, func() error {
		cm, err := c.get(ctx)
		if err != nil {
			return err
		}
		base := NewState()
		if cm != nil {
			if err := foreignKeys(cm); err != nil {
				return err
			}
			b, derr := decodeConfigMap(cm)
			switch {
			case derr == nil:
				base = b
			default:
				corrupt = &CorruptStateError{Ref: c.ref(), Content: contentOf(cm), Err: derr}
			}
		}
		s.replay(base)
		if cm == nil {
			data, err := s.encodeGzip()
			if err != nil {
				return err
			}
			cm = c.newConfigMap()
			cm.BinaryData = map[string][]byte{StateBinaryKey: data}
			_, err = c.Client.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return err
			}
			return c.missing(err)
		}
		return c.write(ctx, cm, s, metav1.UpdateOptions{})
	})
	if err != nil {
		return fmt.Errorf("state %s: %w", c.ref(), err)
	}
	s.journal = nil
	if corrupt != nil {
		return corrupt
	}
	return nil
}

// write updates cm to hold s, with cm's resourceVersion.
func (c *ConfigMapStore) write(ctx context.Context, cm *corev1.ConfigMap, s *State, opts metav1.UpdateOptions) error {
	data, err := s.encodeGzip()
	if err != nil {
		return err
	}
	cm = cm.DeepCopy()
	cm.Data = nil
	cm.BinaryData = map[string][]byte{StateBinaryKey: data}
	_, err = c.Client.CoreV1().ConfigMaps(c.Namespace).Update(ctx, cm, opts)
	return err
}

func (c *ConfigMapStore) newConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      c.Name,
		Namespace: c.Namespace,
		Labels:    map[string]string{labelManagedBy: "driftscan", labelComponent: "notify-state"},
	}}
}

// get returns the ConfigMap, nil when there is none.
func (c *ConfigMapStore) get(ctx context.Context) (*corev1.ConfigMap, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// foreignKeys refuses a ConfigMap that holds keys other than the state's,
// unless it is labelled as a state (app.kubernetes.io/component state or
// notify-state): it belongs to something else, which a reset would erase.
func foreignKeys(cm *corev1.ConfigMap) error {
	var keys []string
	for k := range cm.Data {
		if k != StateDataKey {
			keys = append(keys, k)
		}
	}
	for k := range cm.BinaryData {
		if k != StateBinaryKey {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	switch cm.Labels[labelComponent] {
	case "state", "notify-state":
		return nil
	}
	slices.Sort(keys)
	return fmt.Errorf("holds keys %v besides the state and is not labelled %s=state: it belongs to something else, so it is left alone; give --state a ConfigMap of its own", keys, labelComponent)
}

// maxStateJSON bounds what a gzipped state may unpack to.
const maxStateJSON = 64 << 20

// decodeConfigMap reads the state out of cm: StateBinaryKey, else the
// older StateDataKey.
func decodeConfigMap(cm *corev1.ConfigMap) (*State, error) {
	if gz, ok := cm.BinaryData[StateBinaryKey]; ok {
		data, err := gunzip(gz)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", StateBinaryKey, err)
		}
		s, err := decodeState(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", StateBinaryKey, err)
		}
		return s, nil
	}
	s, err := decodeState([]byte(cm.Data[StateDataKey]))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", StateDataKey, err)
	}
	return s, nil
}

func gunzip(gz []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, maxStateJSON+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxStateJSON {
		return nil, fmt.Errorf("unpacks to more than %d MiB", maxStateJSON>>20)
	}
	return data, nil
}

// maxContent bounds the unreadable content a CorruptStateError carries.
const maxContent = 4 << 10

// contentOf is cm's data as text, for the log line of a reset: each key
// and its value (a gzipped value unpacked where it unpacks), cut short.
func contentOf(cm *corev1.ConfigMap) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		fmt.Fprintf(&b, "%s: %s\n", k, cm.Data[k])
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		if data, err := gunzip(cm.BinaryData[k]); err == nil {
			fmt.Fprintf(&b, "%s (gzip): %s\n", k, data)
		} else {
			fmt.Fprintf(&b, "%s: %d bytes that do not unpack (%v)\n", k, len(cm.BinaryData[k]), err)
		}
	}
	s := b.String()
	if len(s) > maxContent {
		s = s[:maxContent] + "…"
	}
	return s
}

// Usage is how much of its store a state takes.
type Usage struct {
	Bytes   int
	Limit   int // 0: no limit
	Objects int
}
