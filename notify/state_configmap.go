package notify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// StateDataKey is the ConfigMap data key that holds the state.
const StateDataKey = "state.json"

// Labels and annotations driftscan puts on its state ConfigMaps.
const (
	labelManagedBy       = "app.kubernetes.io/managed-by"
	labelComponent       = "app.kubernetes.io/component"
	annotationCorruptOf  = "driftscan.dev/corrupt-state-of"
	annotationCorruptWhy = "driftscan.dev/corrupt-reason"
)

// ConfigMapStore keeps the state in one ConfigMap, for scans that run in
// the cluster. It needs get and update on that ConfigMap, and create in its
// namespace the first time (or when a corrupt state is kept aside): a chart
// may create it empty beforehand.
//
// Every write carries the resourceVersion it read
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions),
// so when two scans save at once one gets a Conflict, reads what the other
// saved, applies its own changes on top and tries again.
//
// A ConfigMap holds at most 1 MiB, about 3000 objects with open drift.
type ConfigMapStore struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Now stamps the name of a corrupt state kept aside; nil means time.Now.
	Now func() time.Time
}

func (c *ConfigMapStore) ref() string { return "configmap:" + c.Namespace + "/" + c.Name }

// saveBackoff bounds the conflict retries of Save and Load.
var saveBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: time.Second}

// Load reads the ConfigMap; a missing one, or one without data, is an empty
// state. One whose content is not a driftscan state is copied to
// NAME-corrupt-<time>, reset to an empty state, and reported with a
// *CorruptStateError beside the empty state.
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
		s, derr := decodeConfigMap(cm)
		if derr == nil {
			st = s
			return nil
		}
		kept, err := c.keepAside(ctx, cm, derr)
		if err != nil {
			return err
		}
		empty, err := NewState().encode()
		if err != nil {
			return err
		}
		cm.Data = map[string]string{StateDataKey: string(empty)}
		cm.BinaryData = nil
		if _, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		st = NewState()
		corrupt = &CorruptStateError{Ref: c.ref(), KeptAs: "configmap:" + c.Namespace + "/" + kept, Err: derr}
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

// Save applies s's changes to the ConfigMap as it is now and writes it with
// the resourceVersion it read, again on a conflict. With no changes it
// writes nothing. When the ConfigMap had become unreadable since Load, it
// is kept aside, the state is written, and the *CorruptStateError is
// returned.
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
			b, derr := decodeConfigMap(cm)
			switch {
			case derr == nil:
				base = b
			default:
				kept, err := c.keepAside(ctx, cm, derr)
				if err != nil {
					return err
				}
				corrupt = &CorruptStateError{Ref: c.ref(), KeptAs: "configmap:" + c.Namespace + "/" + kept, Err: derr}
			}
		}
		s.replay(base)
		data, err := s.encode()
		if err != nil {
			return err
		}
		cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
		if cm == nil {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name:      c.Name,
				Namespace: c.Namespace,
				Labels:    map[string]string{labelManagedBy: "driftscan", labelComponent: "notify-state"},
			}}
			cm.Data = map[string]string{StateDataKey: string(data)}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		cm.Data = map[string]string{StateDataKey: string(data)}
		cm.BinaryData = nil
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
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

// get returns the ConfigMap, nil when there is none.
func (c *ConfigMapStore) get(ctx context.Context) (*corev1.ConfigMap, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// decodeConfigMap reads the state out of cm. A ConfigMap with keys other
// than StateDataKey belongs to something else.
func decodeConfigMap(cm *corev1.ConfigMap) (*State, error) {
	if len(cm.BinaryData) > 0 {
		return nil, fmt.Errorf("has binaryData keys %v", slices.Sorted(maps.Keys(cm.BinaryData)))
	}
	for k := range cm.Data {
		if k != StateDataKey {
			return nil, fmt.Errorf("has data keys %v, want only %s", slices.Sorted(maps.Keys(cm.Data)), StateDataKey)
		}
	}
	s, err := decodeState([]byte(cm.Data[StateDataKey]))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", StateDataKey, err)
	}
	return s, nil
}

// keepAside copies cm to NAME-corrupt-<time> and returns the copy's name.
// A copy of that name with the same content is taken as made by a scan
// racing this one.
func (c *ConfigMapStore) keepAside(ctx context.Context, cm *corev1.ConfigMap, why error) (string, error) {
	base := cm.Name
	suffix := "-corrupt-" + stamp(c.Now)
	if len(base)+len(suffix)+3 > 253 {
		base = base[:253-len(suffix)-3]
	}
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	reason := why.Error()
	if len(reason) > 1000 {
		reason = reason[:1000]
	}
	for i := 0; i < 100; i++ {
		name := base + suffix
		if i > 0 {
			name = fmt.Sprintf("%s%s-%d", base, suffix, i)
		}
		cp := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   c.Namespace,
				Labels:      maps.Clone(cm.Labels),
				Annotations: maps.Clone(cm.Annotations),
			},
			Data:       cm.Data,
			BinaryData: cm.BinaryData,
		}
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		cp.Annotations[annotationCorruptOf] = cm.Name
		cp.Annotations[annotationCorruptWhy] = reason
		_, err := cms.Create(ctx, cp, metav1.CreateOptions{})
		if err == nil {
			return name, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("keep corrupt state aside as %s: %w", name, err)
		}
		got, gerr := cms.Get(ctx, name, metav1.GetOptions{})
		if gerr == nil && maps.Equal(got.Data, cm.Data) && maps.EqualFunc(got.BinaryData, cm.BinaryData, func(a, b []byte) bool { return string(a) == string(b) }) {
			return name, nil
		}
	}
	return "", errors.New("keep corrupt state aside: too many copies of this second")
}
