package views

// DebuginfoPage is /debuginfo: the stored debug files, newest first.
type DebuginfoPage struct {
	Page
	Base  string // this server's address, for DEBUGINFOD_URLS
	Q     string // the search
	Files []DebugFile
}

// DebugFile is one stored file: its build ID (Href downloads it over
// debuginfod), name, kind (debuginfo or executable), size, upload time and
// the profiles whose symbolization used it.
type DebugFile struct {
	BuildID, Href, Name, Kind, Size, Uploaded string
	Profiles                                  []NavLink
}
