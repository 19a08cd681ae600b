// Package ociimage writes and reads the container image of idemsync as an
// OCI image layout in one tar file, offline: no Docker daemon, no registry
// and no base image to pull, so CI builds and checks the image without
// either (docs/operations.md, "Install"). go-containerregistry (the library
// ko builds the published image with) computes the manifests, configs,
// digests and diff IDs and lays out the blobs; the files of each layer and
// the tar around the layout are ours, so every timestamp is fixed.
//
// The image is scratch plus what a static Go binary needs to run as the
// sidecar of `idemsync serve`: the CA certificates (for HTTPS sources and
// targets), a nonroot user 65532 with a home and /tmp, and the binary at
// ko's path (/ko-app/idemsync), so it is laid out like the image the
// release publishes with ko on distroless static (.goreleaser.yaml).
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image runs as and where: ko's layout (bare: true) and
// distroless's nonroot user.
const (
	BinaryPath = "/ko-app/idemsync"
	User       = "65532:65532"
	WorkingDir = "/home/nonroot"
	// Port is `idemsync serve`'s default listen port (cmd/serve.go).
	Port = "8787/tcp"
	// CertsPath is where Go's crypto/x509 looks first on Linux.
	CertsPath = "/etc/ssl/certs/ca-certificates.crt"
)

// Platform is one binary of the image: linux and its architecture.
type Platform struct {
	Arch   string // GOARCH: amd64, arm64
	Binary string // the static linux binary's path
}

// Options says what goes into the image.
type Options struct {
	Platforms []Platform
	Certs     string            // the CA bundle to copy in (the build host's)
	Tag       string            // the ref name in index.json (a version)
	Labels    map[string]string // OCI labels on every config
	Created   time.Time         // every timestamp, for a reproducible image
}

// file is one entry of a layer.
type file struct {
	name string
	mode int64
	uid  int
	dir  bool
	data []byte
}

// Write writes the image layout tar to w: one OCI manifest per
// platform under one index, the base layer shared by all of them.
// go-containerregistry computes the manifests, configs, digests and diff
// IDs and lays out the blobs; the files of each layer and the tar around
// the layout are ours, with every timestamp o.Created.
func Write(w io.Writer, o Options) error {
	if len(o.Platforms) == 0 {
		return fmt.Errorf("ociimage: no platform given")
	}
	certs, err := os.ReadFile(o.Certs)
	if err != nil {
		return fmt.Errorf("ociimage: the CA certificates: %w", err)
	}
	base, err := layer(o.Created, baseFiles(certs))
	if err != nil {
		return err
	}
	created := v1.Time{Time: o.Created}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		bin, err := os.ReadFile(p.Binary)
		if err != nil {
			return fmt.Errorf("ociimage: the linux/%s binary: %w", p.Arch, err)
		}
		app, err := layer(o.Created, []file{
			{name: path.Dir(BinaryPath)[1:], mode: 0o755, dir: true},
			{name: BinaryPath[1:], mode: 0o755, data: bin},
		})
		if err != nil {
			return err
		}
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		img, err = mutate.ConfigFile(img, &v1.ConfigFile{
			Created: created, Architecture: p.Arch, OS: "linux",
			Config: v1.Config{
				Entrypoint:   []string{BinaryPath},
				User:         User,
				Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin:" + path.Dir(BinaryPath), "SSL_CERT_FILE=" + CertsPath},
				WorkingDir:   WorkingDir,
				ExposedPorts: map[string]struct{}{Port: {}},
				Labels:       o.Labels,
			},
			RootFS: v1.RootFS{Type: "layers"},
		})
		if err != nil {
			return err
		}
		img, err = mutate.Append(img,
			mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "ociimage: CA certificates, nonroot user 65532, /tmp"}},
			mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "ociimage: " + BinaryPath}})
		if err != nil {
			return err
		}
		add := mutate.IndexAddendum{Add: img}
		add.Platform = &v1.Platform{Architecture: p.Arch, OS: "linux"}
		if o.Tag != "" {
			add.Annotations = map[string]string{"org.opencontainers.image.ref.name": o.Tag}
		}
		idx = mutate.AppendManifests(idx, add)
	}
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("ociimage: the image layout: %w", err)
	}
	return tarLayout(w, o.Created, dir)
}

// baseFiles is what distroless static gives a static binary: CA
// certificates, a passwd and group naming the nonroot user (so tools that
// look the user up find it), its home and a world-writable /tmp.
func baseFiles(certs []byte) []file {
	const uid = 65532
	return []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: CertsPath[1:], mode: 0o644, data: certs},
		{name: "home", mode: 0o755, dir: true},
		{name: WorkingDir[1:], mode: 0o700, uid: uid, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	}
}

// layer is a gzip-compressed OCI layer of files.
func layer(mtime time.Time, files []file) (v1.Layer, error) {
	var raw bytes.Buffer
	if err := writeTar(&raw, mtime, files); err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw.Bytes())), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

func writeTar(w io.Writer, mtime time.Time, files []file) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// tarLayout puts the layout folder in one tar file (what `podman load`,
// `skopeo copy oci-archive:` and umoci take), its entries in lexical order
// with mtime and root's ownership, so the same image gives the same bytes.
func tarLayout(w io.Writer, mtime time.Time, dir string) error {
	var files []file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		name, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f := file{name: filepath.ToSlash(name), mode: 0o644, dir: d.IsDir()}
		if f.dir {
			f.mode = 0o755
		} else if f.data, err = os.ReadFile(p); err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return err
	}
	return writeTar(w, mtime, files)
}
