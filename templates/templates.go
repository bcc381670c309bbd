// Package templates holds the report templates and static assets, embedded
// into the binary so a report needs no files and no network.
package templates

import "embed"

// FS holds every template and asset.
//
//go:embed *.tmpl
var FS embed.FS
