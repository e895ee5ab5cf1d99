//go:build !noazure

package store

// azblob://container. Build with -tags noazure to leave the Azure client
// out (about 8 MB of the binary).
import _ "gocloud.dev/blob/azureblob"
