// Package ociimage writes and reads the container image of idemsync as an
// OCI image layout in one tar file, with the standard library alone: no
// Docker daemon, no registry and no base image to pull, so CI builds and
// checks the image offline (docs/operations.md, "Install").
//
// The image is scratch plus what a static Go binary needs to run as the
// sidecar of `idemsync serve`: the CA certificates (for HTTPS sources and
// targets), a nonroot user 65532 with a home and /tmp, and the binary at
// ko's path (/ko-app/idemsync), so it is laid out like the image the
// release publishes with ko on distroless static (.goreleaser.yaml).
//
// go-containerregistry was tried in its place and measured; why this
// writer stays is in docs/operations.md ("Why the writer is not
// go-containerregistry").
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"
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

// Media types of the OCI image spec (image-spec v1.1).
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
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

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

// Config is the part of the image config a runtime acts on.
type Config struct {
	Entrypoint   []string            `json:"Entrypoint"`
	Cmd          []string            `json:"Cmd,omitempty"`
	User         string              `json:"User"`
	Env          []string            `json:"Env"`
	WorkingDir   string              `json:"WorkingDir"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts"`
	Labels       map[string]string   `json:"Labels,omitempty"`
}

type imageConfig struct {
	Created      string  `json:"created"`
	Architecture string  `json:"architecture"`
	OS           string  `json:"os"`
	Config       Config  `json:"config"`
	RootFS       rootFS  `json:"rootfs"`
	History      []event `json:"history"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type event struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// file is one entry of a layer.
type file struct {
	name string
	mode int64
	uid  int
	dir  bool
	data []byte
}

// Write writes the image layout tar to w: one manifest per platform under
// one index, the base layer shared by all of them.
func Write(w io.Writer, o Options) error {
	if len(o.Platforms) == 0 {
		return fmt.Errorf("ociimage: no platform given")
	}
	certs, err := os.ReadFile(o.Certs)
	if err != nil {
		return fmt.Errorf("ociimage: the CA certificates: %w", err)
	}
	blobs := map[string][]byte{}
	base, baseDiff, err := layer(o.Created, baseFiles(certs))
	if err != nil {
		return err
	}
	baseDesc := put(blobs, mediaLayer, base)
	created := o.Created.UTC().Format(time.RFC3339)
	idx := index{SchemaVersion: 2, MediaType: mediaIndex}
	for _, p := range o.Platforms {
		bin, err := os.ReadFile(p.Binary)
		if err != nil {
			return fmt.Errorf("ociimage: the linux/%s binary: %w", p.Arch, err)
		}
		app, appDiff, err := layer(o.Created, []file{
			{name: path.Dir(BinaryPath), mode: 0o755, dir: true},
			{name: BinaryPath, mode: 0o755, data: bin},
		})
		if err != nil {
			return err
		}
		cfg, err := json.Marshal(imageConfig{
			Created: created, Architecture: p.Arch, OS: "linux",
			Config: Config{
				Entrypoint:   []string{BinaryPath},
				User:         User,
				Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin:" + path.Dir(BinaryPath), "SSL_CERT_FILE=" + CertsPath},
				WorkingDir:   WorkingDir,
				ExposedPorts: map[string]struct{}{Port: {}},
				Labels:       o.Labels,
			},
			RootFS: rootFS{Type: "layers", DiffIDs: []string{baseDiff, appDiff}},
			History: []event{
				{Created: created, CreatedBy: "ociimage: CA certificates, nonroot user 65532, /tmp"},
				{Created: created, CreatedBy: "ociimage: " + BinaryPath},
			},
		})
		if err != nil {
			return err
		}
		m, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: mediaManifest,
			Config: put(blobs, mediaConfig, cfg),
			Layers: []descriptor{baseDesc, put(blobs, mediaLayer, app)}})
		if err != nil {
			return err
		}
		d := put(blobs, mediaManifest, m)
		d.Platform = &platform{Architecture: p.Arch, OS: "linux"}
		if o.Tag != "" {
			d.Annotations = map[string]string{"org.opencontainers.image.ref.name": o.Tag}
		}
		idx.Manifests = append(idx.Manifests, d)
	}
	ix, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	files := []file{
		{name: "oci-layout", mode: 0o644, data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{name: "index.json", mode: 0o644, data: ix},
		{name: "blobs", mode: 0o755, dir: true},
		{name: "blobs/sha256", mode: 0o755, dir: true},
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		files = append(files, file{name: "blobs/sha256/" + d[len("sha256:"):], mode: 0o644, data: blobs[d]})
	}
	return writeTar(w, o.Created, files)
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

// layer returns a gzip-compressed layer and its diff ID (the digest of the
// uncompressed tar, which the config lists).
func layer(mtime time.Time, files []file) ([]byte, string, error) {
	var raw bytes.Buffer
	for i := range files {
		files[i].name = trimSlash(files[i].name)
	}
	if err := writeTar(&raw, mtime, files); err != nil {
		return nil, "", err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), digest(raw.Bytes()), nil
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

func put(blobs map[string][]byte, media string, data []byte) descriptor {
	d := digest(data)
	blobs[d] = data
	return descriptor{MediaType: media, Digest: d, Size: int64(len(data))}
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func trimSlash(name string) string {
	for len(name) > 0 && name[0] == '/' {
		name = name[1:]
	}
	return name
}
