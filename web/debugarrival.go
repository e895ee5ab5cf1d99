package web

import "viewer/web/debuginfo"

// debugArrived tells the symbolization service that debug files for these
// entries' build IDs are stored, so profiles left without symbols for them
// are symbolized again (ondemand.Service.Arrived). The upload handlers call
// it once a file is stored.
func (s *Server) debugArrived(es []debuginfo.Entry) {
	if s.sym == nil {
		return
	}
	seen := map[string]bool{}
	for _, e := range es {
		if seen[e.BuildID] {
			continue // one file stored as both kinds
		}
		seen[e.BuildID] = true
		if q := s.sym.Arrived(e.BuildID); len(q) > 0 {
			s.log.Info("debug file arrived: symbolizing again", "build_id", e.BuildID, "profiles", q)
		}
	}
}
