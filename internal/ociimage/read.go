package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// Image is one platform's image as a runtime would unpack it.
type Image struct {
	OS, Arch string
	Tag      string
	Config   v1.Config
	Files    map[string]File // absolute path → entry, layers applied in order
}

// File is one entry of the unpacked image.
type File struct {
	Mode     int64 // permission bits as in the tar header
	Uid, Gid int
	Dir      bool
	Data     []byte
}

// Read opens an image layout tar (any writer's, not only Write's) and
// checks it the way a registry or runtime would (go-containerregistry's
// validate): every blob's digest, size and media type, each config's diff
// IDs against its uncompressed layers, each platform against its config.
// Its files are the layers applied in order, whiteouts included.
func Read(name string) ([]Image, error) {
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := untar(name, dir); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return nil, fmt.Errorf("%s: no oci-layout file: not an OCI image layout", name)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := validate.Index(idx); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var images []Image
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("%s: manifest %s: %w", name, d.Digest, err)
		}
		if err := digests(img, d); err != nil {
			return nil, fmt.Errorf("%s: manifest %s: %w", name, d.Digest, err)
		}
		c, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("%s: manifest %s: %w", name, d.Digest, err)
		}
		files, err := unpack(img)
		if err != nil {
			return nil, fmt.Errorf("%s: manifest %s: %w", name, d.Digest, err)
		}
		images = append(images, Image{OS: c.OS, Arch: c.Architecture, Tag: d.Annotations["org.opencontainers.image.ref.name"], Config: c.Config, Files: files})
	}
	if len(images) == 0 {
		return nil, errors.New(name + ": index.json lists no image")
	}
	return images, nil
}

// digests checks the manifest blob against the digest and size the index
// names and the config blob against the digest its manifest names.
// validate.Index does neither for an image read from a layout: it compares
// Digest and ConfigName with the blobs' own SHA-256, which is how both are
// computed there, so a manifest or config changed in place at the same
// size passed (TestReadRejectsACorruptBlob).
func digests(img v1.Image, d v1.Descriptor) error {
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	got, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if got != d.Digest || int64(len(raw)) != d.Size {
		return fmt.Errorf("manifest blob does not match its digest or size %d (its content's is %s, %d bytes)", d.Size, got, len(raw))
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	if got, err = img.ConfigName(); err != nil {
		return err
	}
	if got != m.Config.Digest {
		return fmt.Errorf("config blob %s does not match its digest (its content's is %s)", m.Config.Digest, got)
	}
	return nil
}

// untar writes the regular files of the tar name under dir, refusing any
// name that would land outside it.
func untar(name, dir string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if !filepath.IsLocal(h.Name) {
			return fmt.Errorf("entry %q is outside the layout", h.Name)
		}
		p := filepath.Join(dir, h.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
}

// unpack is the image's filesystem: its layers flattened by
// go-containerregistry, as a runtime applies them (every name cleaned:
// no "./", no trailing slash).
func unpack(img v1.Image) (map[string]File, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]File{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files["/"+h.Name] = File{Mode: h.Mode, Uid: h.Uid, Gid: h.Gid, Dir: h.Typeflag == tar.TypeDir, Data: data}
	}
}
