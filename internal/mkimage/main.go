// Command mkimage writes idemsync's container image as an OCI image layout
// tar from static linux binaries, offline (internal/ociimage): CI builds it
// from the snapshot's binary, where no Docker daemon runs and no base image
// can be pulled (docs/operations.md, "Install").
//
//	go run ./internal/mkimage -out dist/idemsync_oci.tar -tag VERSION \
//	    amd64=dist/idemsync_linux_amd64_v1/idemsync [arm64=...]
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	out := fs.String("out", "", "the image layout tar to write (required)")
	certs := fs.String("certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to copy in")
	tag := fs.String("tag", "", "the image's ref name in index.json (the version)")
	labels := map[string]string{}
	fs.Func("label", "an OCI label KEY=VALUE (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", s)
		}
		labels[k] = v
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: mkimage -out FILE [-tag V] [-label K=V]... ARCH=BINARY...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("-out and at least one ARCH=BINARY are required")
	}
	when, err := created()
	if err != nil {
		return err
	}
	o := ociimage.Options{Certs: *certs, Tag: *tag, Labels: labels, Created: when}
	for _, a := range fs.Args() {
		arch, bin, ok := strings.Cut(a, "=")
		if !ok || arch == "" || bin == "" {
			return fmt.Errorf("argument %q: want ARCH=BINARY, e.g. amd64=dist/idemsync_linux_amd64_v1/idemsync", a)
		}
		o.Platforms = append(o.Platforms, ociimage.Platform{Arch: arch, Binary: bin})
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := ociimage.Write(f, o); err != nil {
		f.Close()
		os.Remove(*out)
		return err
	}
	return f.Close()
}

// created is SOURCE_DATE_EPOCH when set (the reproducible-builds
// convention; CI sets it to the commit's time, as goreleaser stamps the
// binary), else the Unix epoch: the same inputs give the same image digest.
func created() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want Unix seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
