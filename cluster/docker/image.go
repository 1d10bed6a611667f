package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Image is the one image the runtime uses: a fixed tag, rebuilt when the
// binary changes, so "docker images" shows one image of ours however many
// runs there were.
const (
	ImageRepo = "chaos-isr/chaos"
	ImageTag  = "local"
	Image     = ImageRepo + ":" + ImageTag
)

// binaryPath is where the image holds the chaos binary.
const binaryPath = "/chaos"

// dockerfile has no "# syntax=" line and no base image to pull: the
// classic builder reads it without a registry.
const dockerfile = "FROM scratch\nCOPY chaos " + binaryPath + "\nENTRYPOINT [\"" + binaryPath + "\"]\n"

// checkStatic refuses a binary that needs a dynamic loader: a FROM-scratch
// image has none, and the container would die with a confusing "no such
// file or directory".
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the docker runtime needs a static binary (build it with CGO_ENABLED=0, as make build does)", path)
		}
	}
	if f.Machine != elf.EM_X86_64 && f.Machine != elf.EM_AARCH64 {
		return fmt.Errorf("%s is built for %s", path, f.Machine)
	}
	return nil
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// lockImage takes the host-wide lock on the image. Testers on one host
// (parallel test packages, runs of different binaries) build, retag and
// remove it under the lock, and a starting cluster holds it from finding
// its image until its containers exist: no other tester can remove the
// image in between, which would make the container create fall back to a
// pull.
func lockImage() (func(), error) {
	return lockFile(filepath.Join(os.TempDir(), "chaos-docker-image.lock"))
}

// ensureImage makes Image hold binary, building it only when the image is
// missing or holds another binary, and returns the image's id (containers
// are created from the id: the tag may move to another tester's build)
// and the binary's sha256. The caller holds lockImage.
func ensureImage(ctx context.Context, cli client.APIClient, provider *testcontainers.DockerProvider, binary string) (id, sum string, err error) {
	if err := checkStatic(binary); err != nil {
		return "", "", err
	}
	if sum, err = fileHash(binary); err != nil {
		return "", "", err
	}
	old := ""
	if img, err := cli.ImageInspect(ctx, Image); err == nil {
		if img.Config != nil && img.Config.Labels[labelImage] == sum {
			return img.ID, sum, nil
		}
		old = img.ID
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return "", "", err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"chaos", 0o755, bin}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return "", "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", "", err
	}
	req := testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		ContextArchive: bytes.NewReader(buf.Bytes()),
		Repo:           ImageRepo, Tag: ImageTag, KeepImage: true, BuildLogWriter: io.Discard,
		BuildOptionsModifier: func(o *client.ImageBuildOptions) {
			// The classic builder: BuildKit would want its frontend image.
			o.Version = build.BuilderV1
			o.Labels = map[string]string{labelImage: sum}
			o.PullParent = false
			// No cache: a cached layer may be an intermediate image that
			// another tester is removing with its old build.
			o.NoCache = true
		},
	}}
	if _, err := provider.BuildImage(ctx, &req); err != nil {
		return "", "", fmt.Errorf("building %s: %w", Image, err)
	}
	if old != "" {
		// The old build lost its tag; remove it unless a container of a
		// live run still uses it (the sweep's next removal frees it).
		// PruneChildren also removes its untagged parent layers, the
		// classic builder's intermediate images.
		_, _ = cli.ImageRemove(ctx, old, client.ImageRemoveOptions{PruneChildren: true})
	}
	img, err := cli.ImageInspect(ctx, Image)
	if err != nil {
		return "", "", fmt.Errorf("the image just built: %w", err)
	}
	return img.ID, sum, nil
}

// lockFile takes an exclusive flock on path, waiting for it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// RemoveImage removes the runtime's image ("chaos cluster clean --image").
func RemoveImage(ctx context.Context) error {
	cli, err := newClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	unlock, err := lockImage()
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := cli.ImageInspect(ctx, Image); err != nil {
		return nil
	}
	_, err = cli.ImageRemove(ctx, Image, client.ImageRemoveOptions{PruneChildren: true})
	return err
}
