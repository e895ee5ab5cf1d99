package profiles

import "strconv"

// Every store key the server writes lives under a profile's ID, and every
// one is named here (Key joins the two). Old data directories keep working:
// no key was renamed.
const (
	// KeyOriginal is the uploaded bytes, as sent; their SHA-256 is the ID.
	KeyOriginal = "original"
	// KeyConverted is the profile as the upload was converted to pprof
	// (gzipped protobuf), written once at upload so that nothing parses
	// the original again: cold loads, jobs and other replicas read it.
	// A profile parsed elsewhere (an OTLP profile, a merge) has only this
	// copy and no original (Service.StoreParsed).
	KeyConverted = "profile.pb.gz"
	// KeyMeta is the Meta (meta.json).
	KeyMeta = "meta.json"
	// KeySymbolized is the converted profile with the names on-demand
	// symbolization found; preferred over KeyConverted when present.
	KeySymbolized = "symbolized.pb.gz"
	// KeyOutcome is the durable record of a profile's symbolization: the
	// upload's privacy choice and, once a run finished, each binary's
	// outcome (web/ondemand.Outcome).
	KeyOutcome = "symbolize.json"
	// KeyLease is the live record of a running symbolization shared by
	// replicas: which replica holds the job, its rows, a heartbeat
	// (web/ondemand's store-lease coordinator).
	KeyLease = "job.json"
	// KeyControl holds the Skip and Disable requests a replica received
	// for a job another replica runs.
	KeyControl = "control.json"
)

// Key is the store key of one of a profile's objects.
func Key(id, name string) string { return id + "/" + name }

// ClaimKey is the store key of claim number gen on a profile's job, written
// once per generation by the replica that claims it.
func ClaimKey(id string, gen int) string { return Key(id, "claim-"+strconv.Itoa(gen)+".json") }
