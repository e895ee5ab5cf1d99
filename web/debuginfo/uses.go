package debuginfo

import (
	"context"
	"strings"

	"viewer/web/store"
)

// usedKey marks that profile id was symbolized with bid's uploaded file.
func usedKey(bid, id string) string { return prefix + bid + "/used/" + id }

// noteUse records that profile id (being symbolized) used bid's uploaded
// file, once.
func (s *Store) noteUse(ctx context.Context, bid, id string) {
	if id == "" || store.ValidKey(usedKey(bid, id)) != nil {
		return
	}
	if ok, _ := store.Exists(ctx, s.st, usedKey(bid, id)); ok {
		return
	}
	s.st.Put(context.WithoutCancel(ctx), usedKey(bid, id), strings.NewReader(""))
}

// Profiles returns up to n IDs of profiles that were symbolized with bid's
// uploaded files.
func (s *Store) Profiles(ctx context.Context, bid string, n int) []string {
	l, ok := s.st.(store.Lister)
	if !ok || ValidBuildID(bid) != nil {
		return nil
	}
	keys, err := l.List(ctx, prefix+bid+"/used/")
	if err != nil {
		return nil
	}
	var ids []string
	for _, k := range keys {
		ids = append(ids, k[strings.LastIndexByte(k, '/')+1:])
		if len(ids) == n {
			break
		}
	}
	return ids
}
