package notify

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Peek reads the state without the repairs Load makes, and writes nothing:
// a missing ConfigMap is an empty state, an unreadable one an error. It is
// how a shard reads the other shards' states.
func (c *ConfigMapStore) Peek(ctx context.Context) (*State, error) {
	cm, err := c.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", c.ref(), err)
	}
	if cm == nil {
		return NewState(), nil
	}
	if err := foreignKeys(cm); err != nil {
		return nil, fmt.Errorf("state %s: %w", c.ref(), err)
	}
	st, err := decodeConfigMap(cm)
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", c.ref(), err)
	}
	return st, nil
}

// ShardStore is the state of one shard of a sharded run. When the apps
// change, whole namespaces move between shards (shard.Plan), and with them
// what was told about their drift, which the shard that told it holds:
// Load takes over, from the other shards' states, the deliveries of the
// apps this shard owns now (the newer one when both hold one), and lets go
// of those of apps that another shard owns now, which that shard takes
// over. So an app that moves is not notified again. Save and Check are the
// shard's own Store's.
//
// The hand-over assumes the shards run at once, as an Indexed Job's pods
// do: a shard that loads after the one it takes over from has saved finds
// nothing to take, and notifies that app's open drift once more.
type ShardStore struct {
	Store
	// Siblings are the other shards' states, only ever read (Peek).
	Siblings []*ConfigMapStore
	// Index is this shard; ShardOf says which shard an app of the run
	// belongs to, false for an app the run does not know.
	Index   int
	ShardOf func(app string) (int, bool)
	Logger  *slog.Logger
	Now     func() time.Time
}

// Load loads the shard's own state and hands over what moved.
func (s *ShardStore) Load(ctx context.Context) (*State, error) {
	st, err := s.Store.Load(ctx)
	if st == nil {
		return nil, err
	}
	mine := func(app string) bool {
		i, ok := s.ShardOf(app)
		return ok && i == s.Index
	}
	for _, sib := range s.Siblings {
		other, perr := sib.Peek(ctx)
		if perr != nil {
			// Not this run's failure: at worst an app that moved here is
			// notified again.
			s.logger().Warn("cannot read another shard's state: the drift of apps that moved to this shard may be notified again", "err", perr.Error())
			continue
		}
		st.takeOver(other, mine)
	}
	at := time.Now()
	if s.Now != nil {
		at = s.Now()
	}
	st.letGo(func(app string) bool {
		i, ok := s.ShardOf(app)
		return ok && i != s.Index
	}, at)
	return st, err
}

func (s *ShardStore) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// stateChannels are the channels a state records deliveries for.
var stateChannels = []Channel{ChannelSlack, ChannelPagerDuty}

// takeOver records the deliveries of other for the apps mine owns, where
// s has none or an older one.
func (s *State) takeOver(other *State, mine func(app string) bool) {
	for _, e := range other.Objects {
		if !mine(e.App) {
			continue
		}
		for _, ch := range stateChannels {
			d := e.get(ch)
			if d == nil {
				continue
			}
			if cur := s.Get(e.Key, ch); cur == nil || d.SentAt.After(cur.SentAt) {
				s.Record(e.Key, ch, *d)
			}
		}
	}
}

// letGo forgets, as of at, the deliveries of the apps that theirs says
// another shard owns.
func (s *State) letGo(theirs func(app string) bool, at time.Time) {
	var gone []Key
	for _, e := range s.Objects {
		if theirs(e.App) {
			gone = append(gone, e.Key)
		}
	}
	for _, k := range gone {
		for _, ch := range stateChannels {
			if s.Get(k, ch) != nil {
				s.Forget(k, ch, at)
			}
		}
	}
}
