package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Image is one platform's image as a runtime would unpack it.
type Image struct {
	OS, Arch string
	Tag      string
	Config   Config
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
// checks it the way a registry or runtime would: every blob's digest and
// size, each config's diff IDs against its uncompressed layers, each index
// entry's platform against its config.
func Read(name string) ([]Image, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, h.Name, err)
		}
		entries[strings.TrimPrefix(h.Name, "./")] = data
	}
	if _, ok := entries["oci-layout"]; !ok {
		return nil, fmt.Errorf("%s: no oci-layout file: not an OCI image layout", name)
	}
	var idx index
	if err := json.Unmarshal(entries["index.json"], &idx); err != nil {
		return nil, fmt.Errorf("%s: index.json: %w", name, err)
	}
	blob := func(d descriptor, media string) ([]byte, error) {
		if d.MediaType != media {
			return nil, fmt.Errorf("%s: blob %s is %q, want %q", name, d.Digest, d.MediaType, media)
		}
		data, ok := entries["blobs/"+strings.Replace(d.Digest, ":", "/", 1)]
		if !ok {
			return nil, fmt.Errorf("%s: blob %s is missing", name, d.Digest)
		}
		if digest(data) != d.Digest || int64(len(data)) != d.Size {
			return nil, fmt.Errorf("%s: blob %s does not match its digest or size %d", name, d.Digest, d.Size)
		}
		return data, nil
	}
	var images []Image
	for _, md := range idx.Manifests {
		var m manifest
		if err := readJSON(blob, md, mediaManifest, &m); err != nil {
			return nil, err
		}
		var c imageConfig
		if err := readJSON(blob, m.Config, mediaConfig, &c); err != nil {
			return nil, err
		}
		if len(c.RootFS.DiffIDs) != len(m.Layers) {
			return nil, fmt.Errorf("%s: manifest %s has %d layers, its config %d diff IDs", name, md.Digest, len(m.Layers), len(c.RootFS.DiffIDs))
		}
		if p := md.Platform; p != nil && (p.OS != c.OS || p.Architecture != c.Architecture) {
			return nil, fmt.Errorf("%s: index.json lists manifest %s for %s/%s, its config is %s/%s", name, md.Digest, p.OS, p.Architecture, c.OS, c.Architecture)
		}
		img := Image{OS: c.OS, Arch: c.Architecture, Tag: md.Annotations["org.opencontainers.image.ref.name"], Config: c.Config, Files: map[string]File{}}
		for i, ld := range m.Layers {
			gz, err := blob(ld, mediaLayer)
			if err != nil {
				return nil, err
			}
			if err := unpack(gz, c.RootFS.DiffIDs[i], img.Files); err != nil {
				return nil, fmt.Errorf("%s: layer %s: %w", name, ld.Digest, err)
			}
		}
		images = append(images, img)
	}
	if len(images) == 0 {
		return nil, errors.New(name + ": index.json lists no image")
	}
	return images, nil
}

func readJSON(blob func(descriptor, string) ([]byte, error), d descriptor, media string, v any) error {
	data, err := blob(d, media)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("blob %s: %w", d.Digest, err)
	}
	return nil
}

func unpack(gz []byte, diffID string, files map[string]File) error {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	if digest(raw) != diffID {
		return fmt.Errorf("uncompressed digest %s, the config says %s", digest(raw), diffID)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		p := "/" + strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		files[p] = File{Mode: h.Mode, Uid: h.Uid, Gid: h.Gid, Dir: h.Typeflag == tar.TypeDir, Data: data}
	}
}
