package profiles

import (
	"encoding/base32"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

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

// ServicesPrefix holds the index of OTLP profiles by their resource's
// service.name: one empty object per profile under its service's prefix
// (ServicePrefix), named by ServiceEntryKey, so that a store listing of
// the prefix is the service's listing and nothing is read to show it.
const ServicesPrefix = "services/"

// maxServiceName is how much of a service.name the index keeps: its key
// segment holds at most 128 characters, base32 of 80 bytes.
const maxServiceName = 80

var serviceEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// ServicePrefix is the store prefix of one service's entries (its first
// 80 bytes name it).
func ServicePrefix(service string) string {
	if len(service) > maxServiceName {
		service = service[:maxServiceName]
	}
	return ServicesPrefix + strings.ToLower(serviceEncoding.EncodeToString([]byte(service))) + "/"
}

// ServiceEntry is one profile in the index of a service.
type ServiceEntry struct {
	Service string
	Time    time.Time // the profile's start, else when it was stored
	ID      string
	Samples int64 // samples counted (ingest.CountIndex), else sample records
}

// ServiceEntryKey is the store key of e: its service's prefix, then the
// time in Unix nanoseconds (19 digits, so that keys sort by time), the
// profile ID and the sample count.
func ServiceEntryKey(e ServiceEntry) string {
	return fmt.Sprintf("%s%019d-%s-%d", ServicePrefix(e.Service), e.Time.UnixNano(), e.ID, e.Samples)
}

// ParseServiceEntryKey reads a ServiceEntryKey back; ok is false for any
// other key.
func ParseServiceEntryKey(key string) (e ServiceEntry, ok bool) {
	rest, found := strings.CutPrefix(key, ServicesPrefix)
	enc, name, found2 := strings.Cut(rest, "/")
	if !found || !found2 {
		return e, false
	}
	svc, err := serviceEncoding.DecodeString(strings.ToUpper(enc))
	if err != nil {
		return e, false
	}
	parts := strings.Split(name, "-")
	if len(parts) != 3 || !ValidID(parts[1]) {
		return e, false
	}
	ns, err1 := strconv.ParseInt(parts[0], 10, 64)
	n, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return e, false
	}
	return ServiceEntry{Service: string(svc), Time: time.Unix(0, ns).UTC(), ID: parts[1], Samples: n}, true
}

// RecentPrefix holds the index of uploads by day, for the compare picker's
// list (/api/recent): one empty object per acknowledged upload, named by
// RecentKey, so that every replica sharing the store lists the same
// uploads, and a restart keeps them, without reading any profile.
const RecentPrefix = "recent/"

// recentDayLayout names a day's folder of the recent index (UTC).
const recentDayLayout = "20060102"

// RecentDayPrefix is the store prefix of the uploads made on t's day (UTC).
func RecentDayPrefix(t time.Time) string {
	return RecentPrefix + t.UTC().Format(recentDayLayout) + "/"
}

// RecentKey is the store key of an upload of id at t: its day's prefix,
// then the nanoseconds left until the end of time (19 digits, so that a
// listing sorted by key is newest first) and the ID.
func RecentKey(id string, t time.Time) string {
	return fmt.Sprintf("%s%019d-%s", RecentDayPrefix(t), math.MaxInt64-t.UnixNano(), id)
}

// ParseRecentKey reads a RecentKey back; ok is false for any other key.
func ParseRecentKey(key string) (id string, t time.Time, ok bool) {
	rest, found := strings.CutPrefix(key, RecentPrefix)
	_, name, found2 := strings.Cut(rest, "/")
	left, id, found3 := strings.Cut(name, "-")
	if !found || !found2 || !found3 || len(left) != 19 || !ValidID(id) {
		return "", time.Time{}, false
	}
	n, err := strconv.ParseInt(left, 10, 64)
	if err != nil || n < 0 {
		return "", time.Time{}, false
	}
	return id, time.Unix(0, math.MaxInt64-n).UTC(), true
}
