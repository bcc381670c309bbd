package rundir

import "time"

// Shard says that a run is one shard of a sweep spread over several
// client hosts (`headroom sweep --shard I/N`): it sent its share of the
// plan that the manifest's workload describes (every level's concurrency or
// arrivals split across the shards, the requests partitioned by sequence
// number), and `headroom merge` joins the shards into one run.
type Shard struct {
	Index int `json:"index"` // 0-based
	Count int `json:"count"` // N, the shards of the plan
	// PlanID is the same in every shard of one plan: a hash of the
	// workload, the shard count and the start times. merge refuses shards
	// of different plans.
	PlanID string `json:"plan_id"`
	// StartAt is when level 0 starts on the reference clock; level k starts
	// at StartAt + k × LevelEveryS.
	StartAt     time.Time `json:"start_at"`
	LevelEveryS float64   `json:"level_every_s,omitempty"`
	// Clock is this host's clock against the shards' common reference.
	Clock *ClockOffset `json:"clock,omitempty"`
}

// Clock references.
const (
	// ClockServerDate: the server's HTTP Date header, read at the moment its
	// second changes (the request before and the request after the change
	// bracket it on the local clock).
	ClockServerDate = "server Date header"
	// ClockNTP: the kernel's clock as the host's NTP daemon disciplines it
	// (adjtimex: synchronized, with the daemon's maximum error).
	ClockNTP = "NTP (kernel clock)"
)

// ClockOffset is one host's clock against a reference: a time t on the
// host is t − OffsetS on the reference, give or take UncertaintyS.
type ClockOffset struct {
	Reference    string  `json:"reference"`
	OffsetS      float64 `json:"offset_s"`
	UncertaintyS float64 `json:"uncertainty_s"`
	// Known is false when the reference could not be read (Error says
	// why); OffsetS is then 0 and meaningless.
	Known bool   `json:"known"`
	Error string `json:"error,omitempty"`
	// Samples is the number of requests the measurement made.
	Samples    int       `json:"samples,omitempty"`
	MeasuredAt time.Time `json:"measured_at,omitzero"`
	// NTP is the kernel's own account of its clock, kept beside the
	// measured offset: when every shard's kernel clock is synchronized
	// within the bound, merge may use UTC itself as the reference.
	NTP *NTPState `json:"ntp,omitempty"`
}

// NTPState is what the kernel says about its clock (adjtimex).
type NTPState struct {
	Synchronized bool    `json:"synchronized"`
	MaxErrorS    float64 `json:"max_error_s"`
	EstErrorS    float64 `json:"est_error_s"`
}

// Merged says that a run was made by `headroom merge` from shards: which
// ones, which were missing or stopped early, and the clock each was
// corrected by.
type Merged struct {
	PlanID string `json:"plan_id"`
	Count  int    `json:"count"` // shards of the plan
	// Reference is the clock every time was corrected to (ClockServerDate
	// or ClockNTP); BoundS is the uncertainty above which a shard is
	// flagged.
	Reference string        `json:"clock_reference"`
	BoundS    float64       `json:"clock_bound_s"`
	Shards    []MergedShard `json:"shards"`
	// Missing are the indices of shards of the plan that were not given.
	Missing []int `json:"missing,omitempty"`
	// PartialLevels are the levels some shard that had a share of them did
	// not finish (missing, died or stopped): their rows are kept, but they
	// hold less load than the plan says.
	PartialLevels []int `json:"partial_levels,omitempty"`
}

// MergedShard is one shard merged.
type MergedShard struct {
	Index    int      `json:"index"`
	RunID    string   `json:"run_id"`
	Dir      string   `json:"dir"`
	Host     string   `json:"host,omitempty"`
	Complete bool     `json:"complete"`
	Stopped  *Stopped `json:"stopped,omitempty"`
	// OffsetS and UncertaintyS are what its times were corrected by
	// (reference = local − offset).
	OffsetS      float64 `json:"offset_s"`
	UncertaintyS float64 `json:"uncertainty_s"`
	// ClockFlagged is true when UncertaintyS is above the bound (or the
	// offset is unknown).
	ClockFlagged bool `json:"clock_flagged,omitempty"`
	// Levels lists the level indices the shard finished.
	Levels   []int `json:"levels_complete,omitempty"`
	Requests int64 `json:"requests"`
}
