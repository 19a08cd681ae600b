package initgen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A description read from a file is bounded as one read from a URL: a
// file over the bound (a 1 GB export, /dev/zero, a FIFO that never ends)
// is refused rather than read whole into memory, which the decoded maps
// then multiply.
func TestOpenAPIFileOverTheBoundRefused(t *testing.T) {
	old := maxDescription
	maxDescription = 4 << 10
	t.Cleanup(func() { maxDescription = old })
	doc := "openapi: 3.0.0\ninfo: {title: t, version: '1', description: " + strings.Repeat("x", 8<<10) + "}\npaths: {}\n"
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadOpenAPI(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "larger than") || !strings.Contains(err.Error(), path) {
		t.Fatalf("ReadOpenAPI of a %d-byte file with a %d-byte bound: %v, want a refusal naming the file and the bound", len(doc), maxDescription, err)
	}
	// At the bound it is read.
	small := filepath.Join(t.TempDir(), "small.yaml")
	if err := os.WriteFile(small, []byte("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOpenAPI(context.Background(), small); err != nil {
		t.Fatalf("ReadOpenAPI of a small file: %v", err)
	}
}
