package perfdata

import "github.com/google/pprof/profile"

// Read decodes a whole perf.data held in memory, keeping every record in
// Records.
func Read(data []byte, opt Options) (*File, error) { return read(data, opt, true) }

// Parse reads a perf.data held in memory and converts it to a profile.
func Parse(data []byte, maxDecompressed int64, maxSamples int) (*profile.Profile, error) {
	f, err := Scan(data, Options{MaxDecompressed: maxDecompressed})
	if err != nil {
		return nil, err
	}
	return Convert(f, ConvertOptions{MaxSamples: maxSamples})
}
