// Package objstore reads and writes runs, archives and indexes in object
// storage: s3://bucket/prefix locations, through the AWS SDK for Go v2, so
// any S3-compatible store works (AWS S3, SeaweedFS, MinIO, Ceph, R2, GCS's
// XML API with HMAC keys).
//
// Credentials and region come from the SDK's standard chain (environment,
// shared config and credentials files, SSO, web identity, the instance or
// container role); nothing in this package writes them anywhere. A custom
// endpoint comes from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; with one,
// requests use path-style addressing (bucket in the path), which
// S3-compatible servers expect. The package is a leaf: it knows nothing of
// runs.
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Scheme is the URL scheme of an object-store location.
const Scheme = "s3://"

// IsURL reports whether s names an object-store location rather than a
// local path (s3://, and the schemes refused with a reason by Parse).
func IsURL(s string) bool {
	return strings.HasPrefix(s, Scheme) || strings.HasPrefix(s, "gs://") || strings.HasPrefix(s, "az://")
}

// Location is a bucket and a key prefix (no leading or trailing slash).
type Location struct {
	Bucket, Prefix string
}

// Parse reads s3://bucket/prefix.
func Parse(s string) (Location, error) {
	if strings.HasPrefix(s, "gs://") || strings.HasPrefix(s, "az://") {
		return Location{}, fmt.Errorf("%s: only s3:// locations are supported (for Google Cloud Storage use s3:// with AWS_ENDPOINT_URL_S3=https://storage.googleapis.com and HMAC keys)", s)
	}
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Location{}, fmt.Errorf("%s: not an s3:// location", s)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("%s: no bucket name (want s3://bucket/prefix)", s)
	}
	return Location{Bucket: bucket, Prefix: strings.Trim(path.Clean("/"+prefix), "/")}, nil
}

func (l Location) String() string {
	if l.Prefix == "" {
		return Scheme + l.Bucket
	}
	return Scheme + l.Bucket + "/" + l.Prefix
}

// Join returns the location of name under l (slash-separated).
func (l Location) Join(name ...string) Location {
	p := path.Join(append([]string{l.Prefix}, name...)...)
	return Location{Bucket: l.Bucket, Prefix: strings.Trim(p, "/")}
}

// Key is the object key of name under l.
func (l Location) Key(name string) string {
	if l.Prefix == "" {
		return name
	}
	return l.Prefix + "/" + name
}

// Object is one listed object.
type Object struct {
	Key  string // the full key
	Size int64
	// ETag is the store's tag of the object's bytes, as the listing gives
	// it (quoted). For an object written by one plain PUT it is the MD5 of
	// the bytes on AWS S3 and on the S3-compatible servers; for a multipart
	// upload or one encrypted with a KMS key it is something else.
	ETag string
}

// Client is an S3 client; it is safe for concurrent use.
type Client struct {
	s3 *s3.Client
}

var (
	defaultMu     sync.Mutex
	defaultKey    string
	defaultClient *Client
)

// Default returns the client made from the SDK's standard configuration
// chain. It is made once per process and made again only when the
// environment names another endpoint or key (tests start servers).
func Default(ctx context.Context) (*Client, error) {
	key := os.Getenv("AWS_ENDPOINT_URL_S3") + "\x00" + os.Getenv("AWS_ENDPOINT_URL") + "\x00" + os.Getenv("AWS_ACCESS_KEY_ID") + "\x00" + os.Getenv("AWS_PROFILE")
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultClient != nil && key == defaultKey {
		return defaultClient, nil
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(keepIdle)))
	if err != nil {
		return nil, fmt.Errorf("object storage configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // S3-compatible servers ignore it; AWS redirects
	}
	custom := os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	defaultClient = &Client{s3: s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = custom
	})}
	defaultKey = key
	return defaultClient, nil
}

// MaxParallel is the most requests a caller should have in flight at
// once on one client; the client keeps that many connections open between
// requests.
const MaxParallel = 64

// keepIdle keeps up to MaxParallel connections to the server open between
// requests. The SDK's default keeps 10 per host: with more requests in
// flight than that (runs load 16 at once), every burst closed the extra
// connections and dialled them again (a TLS handshake each, against a
// real endpoint).
func keepIdle(t *http.Transport) {
	t.MaxIdleConnsPerHost = MaxParallel
	t.MaxIdleConns = max(t.MaxIdleConns, MaxParallel)
}

// List returns every object whose key starts with prefix (all pages).
func (c *Client) List(ctx context.Context, bucket, prefix string) ([]Object, error) {
	var out []Object
	p := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, describe(Scheme+bucket+"/"+prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)})
		}
	}
	return out, nil
}

// ErrNotFound is returned (wrapped) for a missing object.
var ErrNotFound = errors.New("no such object")

// Get reads a whole object.
func (c *Client) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	res, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, describe(Scheme+bucket+"/"+key, err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if n := aws.ToInt64(res.ContentLength); n > 0 {
		buf.Grow(int(n))
	}
	if _, err := io.Copy(&buf, res.Body); err != nil {
		return nil, fmt.Errorf("%s%s/%s: %w", Scheme, bucket, key, err)
	}
	return buf.Bytes(), nil
}

// Put writes a whole object; a reader sees the old object or the new one.
func (c *Client) Put(ctx context.Context, bucket, key string, data []byte) error {
	_, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data)))})
	return describe(Scheme+bucket+"/"+key, err)
}

// IsEmpty reports whether no object's key starts with prefix.
func (c *Client) IsEmpty(ctx context.Context, bucket, prefix string) (bool, error) {
	res, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, describe(Scheme+bucket+"/"+prefix, err)
	}
	return len(res.Contents) == 0, nil
}

// describe turns the SDK's error into one line naming the location:
// the service's error code and message, without Go types or request ids.
func describe(where string, err error) error {
	if err == nil {
		return nil
	}
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return fmt.Errorf("%s: %w", where, ErrNotFound)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey" {
			return fmt.Errorf("%s: %w", where, ErrNotFound)
		}
		msg := api.ErrorMessage()
		if msg == "" {
			msg = api.ErrorCode()
		} else {
			msg = api.ErrorCode() + ": " + msg
		}
		return fmt.Errorf("%s: %s", where, msg)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", where, err)
	}
	var op *smithy.OperationError
	if errors.As(err, &op) {
		return fmt.Errorf("%s: %s: %v", where, op.Operation(), op.Err)
	}
	return fmt.Errorf("%s: %w", where, err)
}
