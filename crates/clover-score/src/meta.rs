//! What a report was made from: the run's date, clover's version, the input files, and each
//! model as its response records describe it (full id, adapter, server, sampling).
//!
//! Nothing here reads the clock: the same inputs give the same bytes. The date is the one the
//! caller gives (`--date`, or `SOURCE_DATE_EPOCH`, the reproducible-builds convention), and
//! without one the report says it was not recorded.

use clover_protocol::{Generation, Response, Task};

use crate::bootstrap::Bootstrap;

/// The run metadata a report shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMeta {
    /// The run's date as given; `None`: not recorded.
    pub date: Option<String>,
    /// clover's version.
    pub version: String,
    /// Each run-result input as named on the command line, with its results read.
    pub inputs: Vec<(String, u64)>,
    /// Each response file read for the models' settings, with its responses read.
    pub responses: Vec<(String, u64)>,
    /// One entry per model, task and distinct settings, in the order first seen.
    pub models: Vec<ModelMeta>,
    /// How the intervals were drawn.
    pub bootstrap: Bootstrap,
}

/// A model on a task, as its responses say it was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelMeta {
    /// The label results carry (`--label`, or the name generate derived).
    pub model: String,
    pub task: Task,
    /// The settings every response shares; what one call reported (usage, timing, status,
    /// finish reason, attempts, skip) is cleared.
    pub generation: Generation,
}

impl RunMeta {
    /// Notes the model settings of `r`, once per model, task and distinct settings.
    pub fn add_response(&mut self, r: &Response) {
        let generation = Generation {
            skipped: None,
            finish_reason: None,
            usage: None,
            attempts: 0,
            http_status: None,
            duration_secs: 0.0,
            ..r.generation.clone()
        };
        let entry = ModelMeta {
            model: r.model.clone(),
            task: r.task,
            generation,
        };
        if !self.models.contains(&entry) {
            self.models.push(entry);
        }
    }

    /// The models sorted by label, task and id, so the order of the inputs does not show.
    pub fn sorted_models(&self) -> Vec<&ModelMeta> {
        let mut m: Vec<&ModelMeta> = self.models.iter().collect();
        m.sort_by(|a, b| {
            (&a.model, a.task, &a.generation.model_name).cmp(&(
                &b.model,
                b.task,
                &b.generation.model_name,
            ))
        });
        m
    }
}

/// `SOURCE_DATE_EPOCH` (seconds since 1970, UTC) as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn date_from_epoch(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), so no date crate is needed for one line of a report.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_dates() {
        assert_eq!(date_from_epoch(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(date_from_epoch(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(date_from_epoch(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(date_from_epoch(-1), "1969-12-31 23:59:59 UTC");
    }
}
