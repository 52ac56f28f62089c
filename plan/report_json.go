package plan

import "encoding/json"

// MarshalJSON writes the Report with a stable key set: the pool sizes that
// apply only to some models (full/SWA pools of a hybrid sliding-window
// model, Mamba state slots) are null when they do not apply instead of
// missing, and warnings and log lines are always arrays.
func (r Report) MarshalJSON() ([]byte, error) {
	// plain drops this method. The groups' fields sit deeper than the
	// same-named fields below, so those win; encoding/json writes the keys
	// in field order: the groups' fields in Report order, then these five.
	type plain Report
	nullable := func(v int64) *int64 {
		if v == 0 {
			return nil
		}
		return &v
	}
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return json.Marshal(struct {
		plain
		FullMaxTotalNumTokens *int64   `json:"full_max_total_num_tokens"`
		SWAMaxTotalNumTokens  *int64   `json:"swa_max_total_num_tokens"`
		MaxMambaCacheSize     *int64   `json:"max_mamba_cache_size"`
		LogLines              []string `json:"log_lines"`
		Warnings              []string `json:"warnings"`
	}{
		plain:                 plain(r),
		FullMaxTotalNumTokens: nullable(r.FullMaxTotalNumTokens),
		SWAMaxTotalNumTokens:  nullable(r.SWAMaxTotalNumTokens),
		MaxMambaCacheSize:     nullable(r.MaxMambaCacheSize),
		LogLines:              nonNil(r.LogLines),
		Warnings:              nonNil(r.Warnings),
	})
}
