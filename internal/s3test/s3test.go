// Package s3test starts a real S3-compatible server for tests: SeaweedFS's
// `weed server -s3` on loopback, in a temporary directory, on free ports,
// stopped when the test ends. .ci/install-seaweedfs.sh builds the binary
// (pinned in .ci/seaweedfs) and .ci/run passes it as HEADROOM_WEED.
package s3test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a running SeaweedFS with its S3 gateway.
type Server struct {
	// Endpoint is the S3 endpoint, http://127.0.0.1:PORT.
	Endpoint string
	dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
	log      string
}

// Weed finds the weed binary: $HEADROOM_WEED, else the one
// .ci/install-seaweedfs.sh cached. Without one the test is skipped, with
// how to get it, unless HEADROOM_REQUIRE_WEED=1 (CI), where it fails.
func Weed(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("HEADROOM_WEED"); p != "" {
		return p
	}
	cache := os.Getenv("HEADROOM_CI_CACHE")
	if cache == "" {
		if base, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(base, "headroom-ci")
		}
	}
	if found, _ := filepath.Glob(filepath.Join(cache, "seaweedfs-*", "weed")); len(found) > 0 {
		return found[len(found)-1]
	}
	msg := "no SeaweedFS binary: run `bash .ci/install-seaweedfs.sh` (or .ci/run) and set HEADROOM_WEED to the path it prints"
	if os.Getenv("HEADROOM_REQUIRE_WEED") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Start starts SeaweedFS (master, volume, filer and S3 gateway in one
// process) and waits until S3 answers; it creates the named buckets.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	weed := Weed(t)
	dir := t.TempDir()
	p := freePorts(t, 8)
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", p[6]), dir: dir, exited: make(chan struct{}), log: filepath.Join(dir, "weed.log")}
	args := []string{"server", "-dir=" + dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + strconv.Itoa(p[0]), "-master.port.grpc=" + strconv.Itoa(p[1]),
		"-volume.port=" + strconv.Itoa(p[2]), "-volume.port.grpc=" + strconv.Itoa(p[3]),
		"-filer", "-filer.port=" + strconv.Itoa(p[4]), "-filer.port.grpc=" + strconv.Itoa(p[5]),
		"-s3", "-s3.port=" + strconv.Itoa(p[6]), "-s3.port.grpc=" + strconv.Itoa(p[7]),
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-volume.max=8", "-master.volumeSizeLimitMB=64", "-filer.localSocket=" + filepath.Join(dir, "filer.sock"),
		"-s3.localSocket=" + filepath.Join(dir, "s3.sock")}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(weed, args...)
	s.cmd.Dir, s.cmd.Stdout, s.cmd.Stderr = dir, logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); logf.Close(); close(s.exited) }()
	t.Cleanup(s.stop)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if res, err := http.Get(s.Endpoint + "/"); err == nil {
			res.Body.Close()
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("SeaweedFS exited at start:\n%s", s.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("SeaweedFS's S3 gateway did not answer within 90 s:\n%s", s.tail())
		}
	}
	for _, b := range buckets {
		s.createBucket(t, b)
	}
	return s
}

// createBucket makes a bucket (the server has no identities configured,
// so an unsigned request is allowed); it retries while the volume server
// is still registering with the master.
func (s *Server) createBucket(t testing.TB, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPut, s.Endpoint+"/"+name, nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK || res.StatusCode == http.StatusConflict {
				return
			}
			if res.StatusCode == http.StatusBadRequest {
				t.Fatalf("create bucket %s: %s", name, res.Status)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("create bucket %s: %v %v\n%s", name, res, err, s.tail())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Env sets what the AWS SDK's standard chain reads to reach this server
// (endpoint, dummy keys, region), for the rest of the test.
func (s *Server) Env(t testing.TB) {
	t.Setenv("AWS_ENDPOINT_URL_S3", s.Endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "headroom-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "headroom-test-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(s.dir, "no-aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(s.dir, "no-aws-credentials"))
}

func (s *Server) tail() string {
	data, _ := os.ReadFile(s.log)
	lines := strings.Split(string(data), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// stop ends the server: SIGTERM to its process group, SIGKILL after 5 s.
func (s *Server) stop() {
	pgid := -s.cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		syscall.Kill(pgid, syscall.SIGKILL)
		<-s.exited
	}
}
