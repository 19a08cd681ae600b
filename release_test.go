package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The release config builds what the README's Install section promises
// (issue 28): static archives for Linux, macOS and Windows with a checksum
// file, and an OCI image built by ko from the same static build. Where
// goreleaser is installed, `goreleaser check` must accept the file too.
func TestReleaseConfig(t *testing.T) {
	data, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Builds []struct {
			ID     string   `yaml:"id"`
			Env    []string `yaml:"env"`
			Goos   []string `yaml:"goos"`
			Goarch []string `yaml:"goarch"`
		} `yaml:"builds"`
		Archives []struct {
			IDs []string `yaml:"ids"`
		} `yaml:"archives"`
		Checksum struct {
			Name string `yaml:"name_template"`
		} `yaml:"checksum"`
		Kos []struct {
			Build        string   `yaml:"build"`
			Repositories []string `yaml:"repositories"`
			Platforms    []string `yaml:"platforms"`
		} `yaml:"kos"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Builds) != 1 || !slices.Contains(c.Builds[0].Env, "CGO_ENABLED=0") {
		t.Fatalf("want one static build (CGO_ENABLED=0): %+v", c.Builds)
	}
	b := c.Builds[0]
	for _, os := range []string{"linux", "darwin", "windows"} {
		if !slices.Contains(b.Goos, os) {
			t.Errorf("no %s build", os)
		}
	}
	if len(c.Archives) == 0 || !slices.Contains(c.Archives[0].IDs, b.ID) || c.Checksum.Name == "" {
		t.Errorf("want archives of build %s and a checksum file: %+v %+v", b.ID, c.Archives, c.Checksum)
	}
	if len(c.Kos) != 1 || c.Kos[0].Build != b.ID || len(c.Kos[0].Repositories) == 0 || !slices.Contains(c.Kos[0].Platforms, "linux/amd64") {
		t.Errorf("want one ko image of build %s for linux/amd64: %+v", b.ID, c.Kos)
	}
	// .ci/release narrows the targets to linux/amd64 by these two lines.
	for _, line := range []string{"\n    goos: [linux, darwin, windows]\n", "\n    goarch: [amd64, arm64]\n"} {
		if !strings.Contains(string(data), line) {
			t.Errorf(".goreleaser.yaml has no line %q, which .ci/release narrows to one target: update both", strings.TrimSpace(line))
		}
	}
	gr, err := exec.LookPath("goreleaser")
	if err != nil {
		t.Skip("goreleaser is not installed: goreleaser check not run (.ci/run runs it where it is)")
	}
	if out, err := exec.Command(gr, "check").CombinedOutput(); err != nil {
		t.Errorf("goreleaser check: %v\n%s", err, out)
	}
}
