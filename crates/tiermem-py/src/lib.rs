//! PyO3 glue only.
