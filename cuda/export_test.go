package cuda

// SearchDirs exposes the library search directories to the external tests.
var SearchDirs = searchDirs
