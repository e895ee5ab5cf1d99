package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"viewer/web"
	"viewer/web/store"
)

// storeFlags are serve's object storage flags: --store names a bucket that
// any number of replicas share; without it profiles stay in --data.
type storeFlags struct {
	url       string
	replicaID string
	takeover  time.Duration
}

func registerStoreFlags(fs *flag.FlagSet) *storeFlags {
	f := &storeFlags{}
	fs.StringVar(&f.url, "store", "", "keep profiles in an object store `URL` instead of --data, shared by every replica behind a load balancer:\n"+
		"s3://BUCKET?region=REGION[&endpoint=URL&use_path_style=true] (S3, MinIO, Ceph; credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance role),\n"+
		"gs://BUCKET (GOOGLE_APPLICATION_CREDENTIALS), azblob://CONTAINER (AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY), file:///DIR;\n"+
		"add &prefix=DIR/ to keep keys under DIR/")
	fs.StringVar(&f.replicaID, "replica-id", "", "this replica's `name` in the store's job records (default HOSTNAME-PID-RANDOM)")
	fs.DurationVar(&f.takeover, "takeover-after", 30*time.Second, "with --store: take over a symbolization another replica runs once its record has not changed for this `duration`")
	return f
}

// open returns the store and the replica settings --store asks for, or
// nils for the local directory; close releases the bucket.
func (f *storeFlags) open(ctx context.Context) (st store.Store, rep *web.ReplicaConfig, desc string, close func(), err error) {
	if f.takeover <= 0 {
		return nil, nil, "", nil, usageError{"--takeover-after must be positive"}
	}
	if f.url == "" {
		if f.replicaID != "" {
			return nil, nil, "", nil, usageError{"--replica-id needs --store: replicas share profiles only through an object store"}
		}
		return nil, nil, "", func() {}, nil
	}
	b, err := store.OpenURL(ctx, f.url)
	if err != nil {
		return nil, nil, "", nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.Check(cctx); err != nil {
		b.Close()
		return nil, nil, "", nil, fmt.Errorf("%w (check the URL, the credentials in the environment and that the bucket exists)", err)
	}
	rep = &web.ReplicaConfig{ID: f.replicaID, TakeoverAfter: f.takeover}
	return b, rep, b.String(), func() { b.Close() }, nil
}
