package profiles

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"viewer/web/store"
)

// The uploads a server took most recently, for the flame page's compare
// picker. Each acknowledged upload leaves an empty index object under
// RecentPrefix, so replicas sharing a store list the same uploads and a
// restart keeps them; a store that cannot list its keys (store.Lister)
// falls back to this process's own uploads, kept in memory.

// RecentDays is how many days back Recent looks for uploads: a listing
// reads at most that many day folders, however old the store.
const RecentDays = 31

// recentMemory is this process's newest uploads, newest first.
type recentMemory struct {
	mu  sync.Mutex
	ids []string
}

// recentMemoryKept is how many uploads recentMemory keeps.
const recentMemoryKept = 100

func (r *recentMemory) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = slices.DeleteFunc(r.ids, func(x string) bool { return x == id })
	r.ids = slices.Insert(r.ids, 0, id)
	r.ids = r.ids[:min(len(r.ids), recentMemoryKept)]
}

func (r *recentMemory) list(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids[:min(n, len(r.ids))])
}

// NoteUpload records that the upload of id was acknowledged now. A
// failure to write its index entry is logged, never the upload's: the
// profile is stored, only the picker's list misses it.
func (s *Service) NoteUpload(ctx context.Context, id string) {
	s.recent.add(id)
	if _, ok := s.store.(store.Lister); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := store.PutIndex(ctx, s.store, []string{RecentKey(id, time.Now())}); err != nil {
		s.log.Warn("recent uploads: index entry not written", "profile", id, "err", err)
	}
}

// Recent returns the IDs of the n newest uploads, newest first, each once:
// from the store's index when it lists keys (every replica's uploads,
// across restarts, up to RecentDays back), else this process's own.
func (s *Service) Recent(ctx context.Context, n int) ([]string, error) {
	l, ok := s.store.(store.Lister)
	if !ok {
		return s.recent.list(n), nil
	}
	var ids []string
	seen := map[string]bool{}
	day := time.Now().UTC()
	for range RecentDays {
		keys, err := l.List(ctx, RecentDayPrefix(day))
		if err != nil {
			return nil, fmt.Errorf("listing recent uploads: %w", err)
		}
		slices.Sort(keys) // newest first: the keys count down
		for _, k := range keys {
			id, _, ok := ParseRecentKey(k)
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			if ids = append(ids, id); len(ids) == n {
				return ids, nil
			}
		}
		day = day.AddDate(0, 0, -1)
	}
	return ids, nil
}
