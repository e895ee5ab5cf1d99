package views

// ServicesPage is /services: the OTLP profiles received, one row per
// service.name, each profile linked, and a form to merge a time range.
type ServicesPage struct {
	Page
	Services []ServiceRow
	// Unlisted says why the index cannot be read ("" when it can).
	Unlisted string
}

// ServiceRow is one service: its newest profiles first.
type ServiceRow struct {
	Name string
	// MergeAction is the /s/SERVICE URL the range form submits to.
	MergeAction string
	// From and To are the oldest and newest profile's times, in the
	// form's datetime-local format (UTC), the form's defaults.
	From, To string
	Profiles []ServiceProfile
	// More counts the profiles not listed (only the newest are).
	More int
	// Total is how many profiles the service has.
	Total int
}

// ServiceProfile is one profile of a service.
type ServiceProfile struct {
	Time    string // UTC, "2006-01-02 15:04:05"
	Samples string
	Href    string
	ID      string
}
