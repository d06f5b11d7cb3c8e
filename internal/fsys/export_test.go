package fsys

// MapIsMmap exposes to the external tests whether OS mappings are mmap or the copying fallback.
const MapIsMmap = mapIsMmap
