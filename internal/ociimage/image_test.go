package ociimage

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeImage writes an image of two fake binaries and returns its path
// and the binaries' contents by architecture.
func writeImage(t *testing.T, dir string) (string, map[string][]byte) {
	t.Helper()
	bins := map[string][]byte{"amd64": []byte("\x7fELF amd64 binary"), "arm64": []byte("\x7fELF arm64 binary")}
	certs := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\nfake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Certs: certs, Tag: "1.2.3", Labels: map[string]string{"org.opencontainers.image.source": "https://example.test/src"},
		Created: time.Unix(1700000000, 0)}
	for _, arch := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, "idemsync_"+arch)
		if err := os.WriteFile(p, bins[arch], 0o755); err != nil {
			t.Fatal(err)
		}
		o.Platforms = append(o.Platforms, Platform{Arch: arch, Binary: p})
	}
	var buf bytes.Buffer
	if err := Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out, bins
}

// The image a runtime unpacks runs the binary as the nonroot user, with
// the CA bundle where Go looks, serve's port declared and a writable /tmp.
func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	out, bins := writeImage(t, dir)
	images, err := Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(images) != 2 {
		t.Fatalf("want one image per platform, got %d", len(images))
	}
	for _, img := range images {
		if img.OS != "linux" || bins[img.Arch] == nil || img.Tag != "1.2.3" {
			t.Errorf("image %s/%s tag %q", img.OS, img.Arch, img.Tag)
		}
		c := img.Config
		if !slices.Equal(c.Entrypoint, []string{"/ko-app/idemsync"}) || c.User != "65532:65532" || c.WorkingDir != "/home/nonroot" {
			t.Errorf("%s: entrypoint %q user %q workdir %q", img.Arch, c.Entrypoint, c.User, c.WorkingDir)
		}
		if _, ok := c.ExposedPorts["8787/tcp"]; !ok || len(c.ExposedPorts) != 1 {
			t.Errorf("%s: exposed ports %v, want serve's 8787/tcp", img.Arch, c.ExposedPorts)
		}
		if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") || c.Labels["org.opencontainers.image.source"] != "https://example.test/src" {
			t.Errorf("%s: env %q labels %v", img.Arch, c.Env, c.Labels)
		}
		bin := img.Files["/ko-app/idemsync"]
		if !bytes.Equal(bin.Data, bins[img.Arch]) || bin.Mode != 0o755 || bin.Dir {
			t.Errorf("%s: /ko-app/idemsync is %q mode %o, want the %s binary, 0755", img.Arch, bin.Data, bin.Mode, img.Arch)
		}
		if f := img.Files["/etc/ssl/certs/ca-certificates.crt"]; !strings.Contains(string(f.Data), "fake") {
			t.Errorf("%s: CA bundle %q", img.Arch, f.Data)
		}
		if f := img.Files["/tmp"]; !f.Dir || f.Mode != 0o1777 {
			t.Errorf("%s: /tmp %+v, want a 1777 directory", img.Arch, f)
		}
		if f := img.Files["/home/nonroot"]; !f.Dir || f.Uid != 65532 {
			t.Errorf("%s: /home/nonroot %+v, want the nonroot user's", img.Arch, f)
		}
		if f := img.Files["/etc/passwd"]; !strings.Contains(string(f.Data), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd %q", img.Arch, f.Data)
		}
	}
}

// The same inputs give the same bytes, so the same image digest.
func TestWriteIsReproducible(t *testing.T) {
	a, _ := writeImage(t, t.TempDir())
	b, _ := writeImage(t, t.TempDir())
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Error("two images of the same inputs differ")
	}
}

// Read checks every blob against its digest, as a registry would: one
// byte changed inside a blob (a config, a manifest, a layer) is an error
// naming the blob.
func TestReadRejectsACorruptBlob(t *testing.T) {
	for _, tc := range []struct {
		blob string
		at   func(t *testing.T, data []byte) int // the offset of a byte of that blob
		want string
	}{
		{"config", marker(`"Entrypoint"`), "does not match its digest"}, // config JSON is plain in the tar
		{"manifest", marker(`"layers":[`), "does not match its digest"},
		{"layer", gzipBlob, "does not match its digest"},
	} {
		t.Run(tc.blob, func(t *testing.T) {
			out, _ := writeImage(t, t.TempDir())
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			data[tc.at(t, data)] ^= 0x20
			if err := os.WriteFile(out, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Read(out); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read of a changed %s blob: %v, want %q", tc.blob, err, tc.want)
			}
		})
	}
}

// marker finds the second byte of s's first occurrence in the tar.
func marker(s string) func(*testing.T, []byte) int {
	return func(t *testing.T, data []byte) int {
		t.Helper()
		i := bytes.Index(data, []byte(s))
		if i < 0 {
			t.Fatalf("no %s in the tar", s)
		}
		return i + 1
	}
}

// gzipBlob finds the middle byte of the first gzip-compressed blob (a layer).
func gzipBlob(t *testing.T, data []byte) int {
	t.Helper()
	r := bytes.NewReader(data)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no gzip blob in the tar: %v", err)
		}
		at := len(data) - r.Len() // tar.Reader has read the header alone
		if h.Size > 2 && data[at] == 0x1f && data[at+1] == 0x8b {
			return at + int(h.Size)/2
		}
	}
}

// The index says which platform each manifest is for; a runtime picks by
// it, so an index entry that names another platform than its config's is
// an error (index.json is no blob: no digest covers it).
func TestReadRejectsAPlatformNotItsConfig(t *testing.T) {
	out, _ := writeImage(t, t.TempDir())
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(`"platform":{"architecture":"amd64"`))
	if i < 0 {
		t.Fatal("no amd64 platform in index.json")
	}
	copy(data[i+len(`"platform":{"architecture":"`):], "arm64")
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(out); err == nil || !strings.Contains(err.Error(), "linux/arm64") || !strings.Contains(err.Error(), "linux/amd64") {
		t.Errorf("Read of an index naming arm64 for the amd64 image: %v, want an error naming both", err)
	}
}

func TestWriteNamesAMissingBinary(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(certs, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(&bytes.Buffer{}, Options{Certs: certs, Platforms: []Platform{{Arch: "arm64", Binary: filepath.Join(dir, "nope")}}})
	if err == nil || !strings.Contains(err.Error(), "linux/arm64 binary") {
		t.Errorf("got %v, want an error naming the linux/arm64 binary", err)
	}
}
