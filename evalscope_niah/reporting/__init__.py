"""What a run leaves: per-sample records, cell statistics, result files, heatmaps, OpenCompass CSVs, comparisons."""
