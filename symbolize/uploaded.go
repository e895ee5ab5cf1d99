package symbolize

import "context"

// Uploaded gives the debug files and executables uploaded to this server
// by build ID (web/debuginfo implements it). They are searched right after
// the local candidates, before debuginfod and also for profiles that refuse
// debuginfod: they are this server's own files.
type Uploaded interface {
	// UploadedFiles returns local paths of the files stored for buildID
	// (lowercase hex), best first; none when there are none. profile is
	// the ID of the profile being symbolized (Options.Profile), "" when
	// none: the server notes which profiles used its uploaded files.
	UploadedFiles(ctx context.Context, buildID, profile string) []string
}

// uploaded lists the uploaded files for bid as search candidates.
func (s *Symbolizer) uploaded(ctx context.Context, bid, profile string) []candidate {
	if s.cfg.Uploaded == nil || bid == "" {
		return nil
	}
	var c []candidate
	for _, p := range s.cfg.Uploaded.UploadedFiles(ctx, bid, profile) {
		c = append(c, candidate{path: p, how: uploadedHow})
	}
	return c
}
