package plan

// AdviceSearches is how many advice searches have run in this process.
func AdviceSearches() int64 { return adviceSearches.Load() }
