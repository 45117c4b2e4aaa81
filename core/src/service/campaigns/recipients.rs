//! Recipients of a campaign, uploaded as JSON (1–1000) or as a CSV body (up to 100,000 rows),
//! all or nothing: every row is read and checked before the transaction that inserts them
//! opens, and a bad row anywhere refuses the upload with the lines of up to 20 bad rows.
//!
//! The body is read whole first (at most 10 MiB, within the HTTP adapter's read deadline):
//! written in batches as it streamed in, an upload held the write transaction, on SQLite the
//! database's one write lock, for as long as its client took to send it, and every other
//! write (an incoming call among them) waited, then failed after the busy timeout.

use std::collections::BTreeMap;
use std::future::poll_fn;

use csv_core::ReadRecordResult;

use super::not_found;
use super::variables;
use crate::auth::Actor;
use crate::blob::ByteStream;
use crate::error::{Error, Result};
use crate::ids::IdKind;
use crate::model::{
    NewRecipient, NewRecipients, Recipient, RecipientFilter, RecipientStatus, RecipientsAdded,
};
use crate::page::{Page, PageParams, PageQuery};
use crate::role::Permission;
use crate::service::{Service, cursor_of};
use crate::validate;

/// Most recipients of a JSON upload.
const MAX_JSON_ROWS: usize = 1000;
/// Most rows of a CSV upload, its header aside.
pub const MAX_CSV_ROWS: u64 = 100_000;
/// Largest CSV upload.
pub const MAX_CSV_BYTES: u64 = 10 * 1024 * 1024;
/// Bad rows an error names.
const MAX_REPORTED: usize = 20;
/// Rows written per statement.
const BATCH: usize = 500;
/// Longest CSV record: a row with 50 variables of 1000 characters fits.
const MAX_RECORD_BYTES: usize = 256 * 1024;

/// The body of `POST /api/campaigns/{campaign_id}/recipients`.
pub enum RecipientsBody {
    /// `{recipients: […]}`.
    Json(NewRecipients),
    /// A `text/csv` body, streamed; its stream ends in an error past the read deadline.
    Csv(ByteStream),
}

/// A row's number, zone and variables, checked.
struct Checked {
    to_number: String,
    timezone: Option<String>,
    dynamic_variables: BTreeMap<String, String>,
}

/// The rows of an upload, checked, and the bad ones.
#[derive(Default)]
struct Rows {
    good: Vec<Checked>,
    rows: u64,
    bad: Vec<String>,
    more_bad: bool,
}

impl Rows {
    /// Checks one row (`at` names it: `line 3`, `recipients[2]`; `row` is already an error
    /// when its CSV cells could not make a recipient).
    fn row(&mut self, at: &str, row: Result<NewRecipient>) {
        self.rows += 1;
        match row.and_then(checked) {
            // Once the upload is refused, good rows are only counted.
            Ok(row) if self.bad.is_empty() => self.good.push(row),
            Ok(_) => {}
            Err(e) => {
                if self.bad.len() < MAX_REPORTED {
                    self.bad.push(format!("{at}: {e}"));
                } else {
                    self.more_bad = true;
                }
                self.good = Vec::new();
            }
        }
    }

    /// Whether enough bad rows are known to refuse the upload without reading on.
    fn full(&self) -> bool {
        self.more_bad
    }

    /// The good rows and how many rows there were; a 400 naming the bad ones, if any.
    fn finish(self) -> Result<(Vec<Checked>, u64)> {
        if !self.bad.is_empty() {
            let more = if self.more_bad { "; and more" } else { "" };
            return Err(Error::invalid(format!(
                "no recipient was added: {}{more}",
                self.bad.join("; ")
            )));
        }
        if self.rows == 0 {
            return Err(Error::invalid("the upload holds no recipients"));
        }
        Ok((self.good, self.rows))
    }
}

/// A row's number, zone and variables, checked.
fn checked(row: NewRecipient) -> Result<Checked> {
    let to_number = validate::e164("to_number", &row.to_number)?;
    let timezone = row
        .timezone
        .as_deref()
        .map(|tz| validate::timezone("timezone", tz))
        .transpose()?;
    let dynamic_variables = variables(row.dynamic_variables)?;
    Ok(Checked {
        to_number,
        timezone,
        dynamic_variables,
    })
}

impl Service {
    /// Adds recipients to a campaign that is not finished; numbers it has are skipped.
    pub async fn recipients_add(
        &self,
        actor: &Actor,
        campaign_id: &str,
        body: RecipientsBody,
    ) -> Result<RecipientsAdded> {
        actor.require(Permission::CampaignsWrite)?;
        let id = IdKind::Campaign.parse(campaign_id)?;
        if let RecipientsBody::Json(json) = &body
            && !(1..=MAX_JSON_ROWS).contains(&json.recipients.len())
        {
            return Err(Error::invalid(format!(
                "recipients must hold 1 to {MAX_JSON_ROWS} entries, got {}; send a CSV body \
                 for more",
                json.recipients.len()
            )));
        }
        // An unknown or finished campaign is told before its body is read; the transaction
        // checks again, under the campaign's lock.
        let campaign = self
            .repo
            .campaign_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| not_found(&id))?;
        if let Some(refused) = campaign.status.refuses_recipients(&id) {
            return Err(refused);
        }
        let mut rows = Rows::default();
        match body {
            RecipientsBody::Json(json) => {
                for (i, row) in json.recipients.into_iter().enumerate() {
                    rows.row(&format!("recipients[{i}]"), Ok(row));
                }
            }
            RecipientsBody::Csv(stream) => csv_rows(stream, &mut rows).await?,
        }
        let (good, total) = rows.finish()?;
        let now = self.now();
        let mut writer = self
            .repo
            .recipients_begin(&actor.organization_id, &id)
            .await?;
        let mut added = 0;
        for batch in good.chunks(BATCH) {
            let batch: Vec<Recipient> = batch
                .iter()
                .map(|row| Recipient {
                    recipient_id: self.ids.generate(IdKind::Recipient),
                    campaign_id: id.clone(),
                    to_number: row.to_number.clone(),
                    timezone: row.timezone.clone(),
                    dynamic_variables: row.dynamic_variables.clone(),
                    status: RecipientStatus::Pending,
                    attempts: 0,
                    last_call_sid: None,
                    next_attempt_at: None,
                    last_outcome: None,
                    created_at: now,
                })
                .collect();
            added += writer.add(&batch).await?;
        }
        writer.commit(now).await?;
        self.jobs.wake();
        Ok(RecipientsAdded {
            added,
            duplicates: total - added,
        })
    }

    /// A campaign's recipients, newest first; only those in `status` when given.
    pub async fn recipient_list(
        &self,
        actor: &Actor,
        campaign_id: &str,
        filter: &RecipientFilter,
        params: &PageParams,
    ) -> Result<Page<Recipient>> {
        actor.require(Permission::CampaignsRead)?;
        let id = IdKind::Campaign.parse(campaign_id)?;
        let status = filter
            .status
            .as_deref()
            .map(|s| {
                RecipientStatus::parse(s).ok_or_else(|| {
                    Error::invalid(format!(
                        "status `{}` is not one of pending, in_progress, completed, failed, \
                         suppressed, canceled",
                        crate::ids::truncate(s, 20)
                    ))
                })
            })
            .transpose()?;
        let scope = status.map(RecipientStatus::as_str).unwrap_or_default();
        let query = PageQuery::from_params_scoped(params, IdKind::Recipient, scope)?;
        if self
            .repo
            .campaign_get(&actor.organization_id, &id)
            .await?
            .is_none()
        {
            return Err(not_found(&id));
        }
        let rows = self
            .repo
            .recipient_list(&actor.organization_id, &id, status, &query)
            .await?;
        Ok(Page::from_rows_by(rows, query.limit, |r| {
            cursor_of(r.created_at, &r.recipient_id).encode_scoped(scope)
        }))
    }
}

/// The columns of a CSV upload: where `to_number` and `timezone` are, and the variable each
/// other column fills.
#[derive(Debug)]
struct Columns {
    to_number: usize,
    timezone: Option<usize>,
    variables: Vec<(usize, String)>,
}

impl Columns {
    fn from_header(fields: &[String]) -> Result<Self> {
        let mut to_number = None;
        let mut timezone = None;
        let mut vars = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (i, raw) in fields.iter().enumerate() {
            let name = raw.trim();
            if !seen.insert(name.to_owned()) {
                return Err(Error::invalid(format!(
                    "line 1: the header names the column `{}` twice",
                    crate::ids::truncate(name, 64)
                )));
            }
            match name {
                "to_number" => to_number = Some(i),
                "timezone" => timezone = Some(i),
                _ => {
                    // Checked as a variable name, with an empty value.
                    variables(Some(BTreeMap::from([(name.to_owned(), String::new())])))
                        .map_err(|e| Error::invalid(format!("line 1: {e}")))?;
                    vars.push((i, name.to_owned()));
                }
            }
        }
        let to_number = to_number.ok_or_else(|| {
            Error::invalid(
                "line 1: the header has no `to_number` column (the first row names the columns)",
            )
        })?;
        Ok(Self {
            to_number,
            timezone,
            variables: vars,
        })
    }

    /// The recipient of a row; empty cells are left out.
    fn recipient(&self, fields: &[String]) -> Result<NewRecipient> {
        let cell = |i: usize| fields.get(i).map(|v| v.trim()).filter(|v| !v.is_empty());
        if fields.len() > self.variables.len() + 2 {
            return Err(Error::invalid(format!(
                "has {} cells, more than the header's columns",
                fields.len()
            )));
        }
        let dynamic_variables: BTreeMap<String, String> = self
            .variables
            .iter()
            .filter_map(|(i, name)| cell(*i).map(|v| (name.clone(), v.to_owned())))
            .collect();
        Ok(NewRecipient {
            to_number: cell(self.to_number).unwrap_or_default().to_owned(),
            timezone: self.timezone.and_then(cell).map(str::to_owned),
            dynamic_variables: Some(dynamic_variables),
        })
    }
}

/// Checks a CSV body into `rows` record by record, as its chunks arrive.
async fn csv_rows(mut stream: ByteStream, rows: &mut Rows) -> Result<()> {
    let mut parser = Records::new();
    let mut columns: Option<Columns> = None;
    let mut records = Vec::new();
    loop {
        let chunk = poll_fn(|cx| stream.as_mut().poll_next(cx))
            .await
            .transpose()?;
        let end = chunk.is_none();
        parser.feed(chunk.as_deref().unwrap_or(&[]), end, &mut records)?;
        for (line, fields) in records.drain(..) {
            let Some(cols) = &columns else {
                columns = Some(Columns::from_header(&fields)?);
                continue;
            };
            if rows.rows >= MAX_CSV_ROWS {
                return Err(Error::invalid(format!(
                    "the CSV has more than {MAX_CSV_ROWS} rows; split it into several uploads"
                )));
            }
            if fields.iter().all(|f| f.trim().is_empty()) {
                continue;
            }
            rows.row(&format!("line {line}"), cols.recipient(&fields));
            if rows.full() {
                return Ok(());
            }
        }
        if end {
            break;
        }
    }
    if columns.is_none() {
        return Err(Error::invalid(
            "the CSV is empty: its first row must name the columns, with `to_number` among them",
        ));
    }
    Ok(())
}

/// CSV records from chunks of bytes, with the line each starts on.
struct Records {
    reader: csv_core::Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
    used: usize,
    fields: usize,
    /// Line of the record being read (1 for the header).
    line: u64,
    /// Newlines read so far.
    newlines: u64,
    started: bool,
}

impl Records {
    fn new() -> Self {
        Self {
            reader: csv_core::Reader::new(),
            out: vec![0; 4096],
            ends: vec![0; 64],
            used: 0,
            fields: 0,
            line: 1,
            newlines: 0,
            started: false,
        }
    }

    /// Parses `input`, appending every record it completes; `end` (with an empty `input`)
    /// ends the body.
    fn feed(
        &mut self,
        mut input: &[u8],
        end: bool,
        records: &mut Vec<(u64, Vec<String>)>,
    ) -> Result<()> {
        if input.is_empty() && !end {
            // An empty input would tell the parser that the body ended.
            return Ok(());
        }
        loop {
            if !self.started {
                // A record starts after the newlines that ended the last one: blank lines
                // are skipped here, so that the line reported is the record's own.
                let blank = input
                    .iter()
                    .take_while(|b| **b == b'\n' || **b == b'\r')
                    .count();
                self.newlines += input[..blank].iter().filter(|b| **b == b'\n').count() as u64;
                input = &input[blank..];
                if input.is_empty() {
                    return Ok(());
                }
                self.line = self.newlines + 1;
                self.started = true;
            }
            let (result, read, written, ended) = self.reader.read_record(
                input,
                &mut self.out[self.used..],
                &mut self.ends[self.fields..],
            );
            self.newlines += input[..read].iter().filter(|b| **b == b'\n').count() as u64;
            input = &input[read..];
            self.used += written;
            self.fields += ended;
            match result {
                ReadRecordResult::InputEmpty => return Ok(()),
                ReadRecordResult::OutputFull => {
                    if self.out.len() >= MAX_RECORD_BYTES {
                        return Err(Error::invalid(format!(
                            "line {}: the row is longer than {} KiB",
                            self.line,
                            MAX_RECORD_BYTES / 1024
                        )));
                    }
                    self.out.resize(self.out.len() * 2, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    if self.ends.len() >= 1024 {
                        return Err(Error::invalid(format!(
                            "line {}: the row has more than 1024 cells",
                            self.line
                        )));
                    }
                    self.ends.resize(self.ends.len() * 2, 0);
                }
                ReadRecordResult::Record => {
                    let mut fields = Vec::with_capacity(self.fields);
                    let mut start = 0;
                    for &end in &self.ends[..self.fields] {
                        let text = std::str::from_utf8(&self.out[start..end]).map_err(|_| {
                            Error::invalid(format!("line {}: the row is not UTF-8", self.line))
                        })?;
                        // A byte-order mark (spreadsheets write one) is not part of the header.
                        let text = if self.line == 1 && start == 0 {
                            text.trim_start_matches('\u{feff}')
                        } else {
                            text
                        };
                        fields.push(text.to_owned());
                        start = end;
                    }
                    records.push((self.line, fields));
                    self.used = 0;
                    self.fields = 0;
                    self.started = false;
                }
                ReadRecordResult::End => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of `body` fed in chunks of `size` bytes.
    fn records(body: &str, size: usize) -> Vec<(u64, Vec<String>)> {
        let mut parser = Records::new();
        let mut out = Vec::new();
        for chunk in body.as_bytes().chunks(size) {
            parser.feed(chunk, false, &mut out).unwrap();
        }
        parser.feed(&[], true, &mut out).unwrap();
        out
    }

    #[test]
    fn records_know_their_lines_whatever_the_chunks() {
        let body = "\u{feff}to_number,note\r\n+14155550100,\"two\nlines\"\r\n\r\n+14155550101,\"a \"\"quote\"\"\"\n+14155550102,last";
        for size in [1, 2, 3, 7, 64, 4096] {
            let got = records(body, size);
            let lines: Vec<u64> = got.iter().map(|(l, _)| *l).collect();
            assert_eq!(lines, [1, 2, 5, 6], "chunks of {size}");
            assert_eq!(got[0].1, ["to_number", "note"]);
            assert_eq!(got[1].1, ["+14155550100", "two\nlines"]);
            assert_eq!(got[2].1, ["+14155550101", "a \"quote\""]);
            assert_eq!(got[3].1, ["+14155550102", "last"]);
        }
    }

    #[test]
    fn the_header_names_the_columns() {
        let header = |h: &[&str]| {
            Columns::from_header(&h.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        };
        let cols = header(&["first_name", "to_number", "timezone"]).unwrap();
        let row = cols
            .recipient(&["Ada".into(), "+14155550100".into(), String::new()])
            .unwrap();
        assert_eq!(row.to_number, "+14155550100");
        assert_eq!(row.timezone, None);
        assert_eq!(
            row.dynamic_variables.unwrap(),
            BTreeMap::from([("first_name".to_owned(), "Ada".to_owned())])
        );
        let err = header(&["phone"]).unwrap_err().to_string();
        assert!(err.contains("no `to_number` column"), "{err}");
        let err = header(&["to_number", "x", "x"]).unwrap_err().to_string();
        assert!(err.contains("`x` twice"), "{err}");
        let err = header(&["to_number", "first name"])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("line 1: dynamic_variables"), "{err}");
    }
}
