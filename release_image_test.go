package main

import (
	"database/sql"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"gopkg.in/yaml.v3"
	_ "modernc.org/sqlite" // the sql driver "sqlite", to read the target back

	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/idemsync/idemsync/internal/ociimage"
)

// The container image that .ci/release builds offline from the snapshot's
// linux/amd64 binary (internal/mkimage): it runs where .ci/release points
// IDEMSYNC_TEST_IMAGE at it. The image must carry the archive's binary
// unchanged, ko's entrypoint, the nonroot user, serve's port and the
// release config's labels, and it must run: unpacked into a folder and
// started the way a runtime starts it (chroot into it, its working
// directory, its user, its environment), it syncs the example job
// examples/orders-none.yaml against a fake API into a SQLite file in the
// nonroot user's home.
func TestReleaseImage(t *testing.T) {
	tarball := os.Getenv("IDEMSYNC_TEST_IMAGE")
	if tarball == "" {
		t.Skip("IDEMSYNC_TEST_IMAGE is not set: .ci/release sets it to the image it builds")
	}
	bin, err := os.ReadFile(os.Getenv("IDEMSYNC_TEST_IMAGE_BINARY"))
	if err != nil {
		t.Fatalf("IDEMSYNC_TEST_IMAGE_BINARY (the archive's binary): %v", err)
	}
	version := os.Getenv("IDEMSYNC_TEST_IMAGE_VERSION")
	images, err := ociimage.Read(tarball)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(images, func(img ociimage.Image) bool { return img.OS == "linux" && img.Arch == "amd64" })
	if i < 0 {
		t.Fatalf("no linux/amd64 image in %s", tarball)
	}
	img := images[i]
	c := img.Config
	if !slices.Equal(c.Entrypoint, []string{"/ko-app/idemsync"}) || c.User != "65532:65532" || img.Tag != version {
		t.Errorf("entrypoint %q, user %q, tag %q: want ko's /ko-app/idemsync, 65532:65532, %q", c.Entrypoint, c.User, img.Tag, version)
	}
	if got := img.Files[c.Entrypoint[0]]; string(got.Data) != string(bin) || got.Mode&0o111 == 0 {
		t.Fatalf("the image's %s (%d bytes, mode %o) is not the archive's binary (%d bytes)", c.Entrypoint[0], len(got.Data), got.Mode, len(bin))
	}
	if want := koLabels(t); len(want) == 0 || !maps.Equal(c.Labels, want) {
		t.Errorf("labels %v, want the release's (kos[0].labels) %v", c.Labels, want)
	}

	root := unpack(t, img)
	out := runInImage(t, root, img, nil, "serve", "--help")
	port := strings.TrimSuffix(only(t, c.ExposedPorts), "/tcp")
	if !strings.Contains(out, ":"+port+`"`) {
		t.Errorf("the image exposes %s, but serve's default listen address is not that port:\n%s", port, out)
	}
	if out := runInImage(t, root, img, nil, "version"); !strings.Contains(out, version) {
		t.Errorf("version in the image: %q, want %q", out, version)
	}

	if os.Geteuid() != 0 {
		t.Skip("not root: the sync in the unpacked image (chroot, user 65532) not run")
	}
	api := httptest.NewServer(fakeapi.New(fakeapi.Options{Records: 30}))
	defer api.Close()
	job, err := os.ReadFile("examples/orders-none.yaml")
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, c.WorkingDir)
	if err := os.WriteFile(filepath.Join(home, "orders.yaml"), job, 0o644); err != nil {
		t.Fatal(err)
	}
	runInImage(t, root, img, []string{"EXAMPLE_API=" + api.URL, "OUT_DIR=out"}, "run", "orders.yaml")
	db, err := sql.Open("sqlite", filepath.Join(home, "out", "orders.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM orders_all`).Scan(&n); err != nil || n != 30 {
		t.Errorf("rows synced in the image: %d (%v), want 30", n, err)
	}
}

// unpack writes the image's files into a folder, with their modes and
// owners when running as root (as a runtime would).
func unpack(t *testing.T, img ociimage.Image) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(img.Files))
	for name := range img.Files {
		names = append(names, name)
	}
	slices.Sort(names) // parents first
	for _, name := range names {
		f, p := img.Files[name], filepath.Join(root, name)
		mode := os.FileMode(f.Mode & 0o777)
		if f.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		var err error
		if f.Dir {
			err = os.MkdirAll(p, 0o755)
		} else {
			err = os.WriteFile(p, f.Data, 0o600)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err == nil && os.Geteuid() == 0 {
			err = os.Lchown(p, f.Uid, f.Gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runInImage starts the image's entrypoint with args as a runtime would:
// as root, chrooted into the unpacked image, in its working directory, as
// its user, with its environment; otherwise the binary alone.
func runInImage(t *testing.T, root string, img ociimage.Image, env []string, args ...string) string {
	t.Helper()
	c := img.Config
	cmd := exec.Command(filepath.Join(root, c.Entrypoint[0]), args...)
	cmd.Env = append(slices.Clone(c.Env), env...)
	if os.Geteuid() == 0 {
		var uid, gid uint32
		if _, err := fmt.Sscanf(c.User, "%d:%d", &uid, &gid); err != nil {
			t.Fatalf("the image's user %q: %v", c.User, err)
		}
		cmd.Path, cmd.Dir = c.Entrypoint[0], c.WorkingDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in the image: %v\n%s", c.Entrypoint[0], strings.Join(args, " "), err, out)
	}
	return string(out)
}

// koLabels reads the labels the release's ko image carries.
func koLabels(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Kos []struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"kos"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil || len(c.Kos) == 0 {
		t.Fatalf(".goreleaser.yaml kos: %v", err)
	}
	return c.Kos[0].Labels
}

func only(t *testing.T, ports map[string]struct{}) string {
	t.Helper()
	if len(ports) != 1 {
		t.Fatalf("exposed ports %v, want serve's port alone", ports)
	}
	for p := range ports {
		return p
	}
	return ""
}
