// Package contract holds tests only: that what collect writes into a run
// directory is exactly what analyze reads back, through the real writer
// and the real reader. They live here, not beside either side, because
// they import both (collect must not import analyze), and because a
// parser's fuzz build links every package its tests import.
package contract
