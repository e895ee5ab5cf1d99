package views

import "context"

// ModuleGraph lists the modules that entry modules (names of static/*.js,
// such as "page.js") import, directly or through others, that are not
// entries themselves. Package web passes static.Imports through the
// context the pages render with (WithModuleGraph): views imports no
// project package.
type ModuleGraph func(entries ...string) []string

type moduleGraphKey struct{}

// WithModuleGraph is ctx with g, which moduleScripts asks for the modules
// to preload.
func WithModuleGraph(ctx context.Context, g ModuleGraph) context.Context {
	return context.WithValue(ctx, moduleGraphKey{}, g)
}

// modulePreloads is what the entry modules import, per the context's
// graph: nothing without one.
func modulePreloads(ctx context.Context, entries []string) []string {
	g, _ := ctx.Value(moduleGraphKey{}).(ModuleGraph)
	if g == nil {
		return nil
	}
	return g(entries...)
}
