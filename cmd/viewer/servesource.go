package main

import "viewer/web"

// sourceConfig says where the source view looks for source files: the
// paths profiles name only on loopback (as for mappings, and never with
// --no-local-files), checked against the binary's debug info and confined
// to its compile unit's directory or a --source-dir; the --debug-dir
// directories; and the debuginfod servers symbolization uses.
func (f *symbolizeFlags) sourceConfig(sym *web.SymbolizationConfig) *web.SourceConfig {
	sc := &web.SourceConfig{LocalPaths: f.localFiles(), Dirs: f.debugDirs, Roots: f.sourceDirs}
	if sym != nil && sym.Engine != nil {
		sc.Units = web.EngineUnits{Engine: sym.Engine}
	}
	if sym != nil && sym.Gate.Enabled() && len(sym.Servers) > 0 {
		sc.Fetcher, sc.Servers = sym.Gate, sym.Servers
	}
	return sc
}
