package main

import "viewer/web"

// sourceConfig says where the source view looks for source files: the
// paths profiles name only on loopback (as for mappings), the --debug-dir
// directories, and the debuginfod servers symbolization uses.
func (f *symbolizeFlags) sourceConfig(sym *web.SymbolizationConfig) *web.SourceConfig {
	sc := &web.SourceConfig{LocalPaths: f.loopback(), Dirs: f.debugDirs}
	if sym != nil && sym.Gate.Enabled() && len(sym.Servers) > 0 {
		sc.Fetcher, sc.Servers = sym.Gate, sym.Servers
	}
	return sc
}
