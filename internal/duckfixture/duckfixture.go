// Package duckfixture is a table that DuckDB writes as Parquet in tests
// (internal/sqlcheck, and the copies in rundir/testdata/duckdb): a writer
// that is not headroom's, whose every value is known.
package duckfixture

import "fmt"

// Row is one row of a table with every column type a run's tables use,
// nullable and not, as Query makes it.
type Row struct {
	ID     string   `parquet:"id"`
	Level  int32    `parquet:"level"`
	SendNS int64    `parquet:"send_ns"`
	TTFT   *int64   `parquet:"first_token_ns"`
	E2E    float64  `parquet:"e2e_s"`
	Warm   bool     `parquet:"warmup"`
	Reason *string  `parquet:"finish_reason"`
	Turn   *int32   `parquet:"turn"`
	Power  *float64 `parquet:"power_w"`
	Status string   `parquet:"status"`
}

// Want is row i of the table Query makes.
func Want(i int) Row {
	r := Row{ID: fmt.Sprintf("r-%d", i), Level: int32(i % 5), SendNS: int64(i) * 1_000_003, E2E: float64(i) / 8,
		Warm: i%4 == 0, Status: []string{"ok", "ok", "ok", "http_500"}[i%4]}
	if i%3 != 0 {
		v := int64(i)*1_000_003 + 250_000
		r.TTFT = &v
	}
	if i%7 != 0 {
		s := []string{"length", "stop"}[i%2]
		r.Reason = &s
	}
	if i%2 == 1 {
		v := int32(i / 2)
		r.Turn = &v
	}
	if i%5 != 2 {
		v := 300 + float64(i%11)/4
		r.Power = &v
	}
	return r
}

// Query makes Rows rows in DuckDB's SQL; `COPY (Query) TO 'f.parquet'
// (FORMAT parquet, …)` writes them.
const Query = `SELECT 'r-' || i AS id, (i % 5)::INTEGER AS level, (i * 1000003)::BIGINT AS send_ns,
  CASE WHEN i % 3 = 0 THEN NULL ELSE i * 1000003 + 250000 END::BIGINT AS first_token_ns,
  (i / 8)::DOUBLE AS e2e_s, i % 4 = 0 AS warmup,
  CASE WHEN i % 7 = 0 THEN NULL WHEN i % 2 = 0 THEN 'length' ELSE 'stop' END AS finish_reason,
  CASE WHEN i % 2 = 1 THEN (i // 2)::INTEGER END AS turn,
  CASE WHEN i % 5 != 2 THEN 300 + (i % 11) / 4 END::DOUBLE AS power_w,
  CASE WHEN i % 4 = 3 THEN 'http_500' ELSE 'ok' END AS status
FROM range(5000) t(i)`

// Rows is how many rows Query makes.
const Rows = 5000

// Values are a row's fields, its pointers as their values (nil for null),
// for comparing rows as printed.
func Values(r Row) []any {
	v := func(p any) any {
		switch p := p.(type) {
		case *int64:
			if p != nil {
				return *p
			}
		case *int32:
			if p != nil {
				return *p
			}
		case *float64:
			if p != nil {
				return *p
			}
		case *string:
			if p != nil {
				return *p
			}
		}
		return nil
	}
	return []any{r.ID, r.Level, r.SendNS, v(r.TTFT), r.E2E, r.Warm, v(r.Reason), v(r.Turn), v(r.Power), r.Status}
}

// Mismatch says how rows differ from the table Query makes ("" when they
// hold it exactly): the row count, or the first row that differs.
func Mismatch(rows []Row) string {
	if len(rows) != Rows {
		return fmt.Sprintf("%d rows, want %d", len(rows), Rows)
	}
	for i, got := range rows {
		if g, w := fmt.Sprint(Values(got)), fmt.Sprint(Values(Want(i))); g != w {
			return fmt.Sprintf("row %d: %s, want %s", i, g, w)
		}
	}
	return ""
}
