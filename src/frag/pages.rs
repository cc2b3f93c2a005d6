//! Attribution by pages, for a real allocator that cannot be looked into (`replay`): the live
//! blocks' addresses tell which pages hold live bytes; the resident ones among them (the
//! caller's `mincore`) are what the live blocks keep in RSS. A resident page's unused bytes
//! (the page size minus the live bytes on it) are split equally among the blocks on it: any
//! one of them alone keeps the page resident ("pins" it), so a page held by a single 16-byte
//! block charges that block with the rest of the page. RSS beyond those pages is held by no
//! live block: memory the allocator keeps after frees, its metadata, and the replay's own.

use std::collections::HashMap;

use super::{class_bounds, class_of, sort_sites, ClassRow, Figures, SiteRow, Snapshot, CLASSES};

/// A live block: its address, the bytes the trace asked for, and its site (an index into the
/// caller's table of sites).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSpan {
    /// The address the allocator returned.
    pub start: u64,
    /// The bytes the trace asked for.
    pub size: u64,
    /// The index of its site in the table given to [`attribute`].
    pub site: u32,
}

/// Whether pages are resident: given the address of a page and a count, fills one byte per
/// page (bit 0: resident, as `mincore` does) and returns whether it could tell.
pub type Resident<'a> = dyn FnMut(u64, &mut [u8]) -> bool + 'a;

/// The most pages asked about at once.
const RUN: usize = 4096;

/// Resident pages among `count` pages from page number `first`.
fn count_resident(first: u64, count: u64, page: u64, resident: &mut Resident<'_>) -> u64 {
    let mut buf = vec![0u8; RUN.min(count as usize)];
    let mut n = 0;
    let mut at = 0;
    while at < count {
        let k = (count - at).min(RUN as u64) as usize;
        let b = &mut buf[..k];
        if resident((first + at) * page, b) {
            n += b.iter().filter(|&&x| x & 1 != 0).count() as u64;
        } else {
            n += k as u64;
        }
        at += k as u64;
    }
    n
}

/// The waste of `spans` after `event` operations, with `rss` bytes resident above the
/// baseline, pages of `page` bytes, and `sites` naming each span's site (namespace, site).
pub fn attribute(
    spans: &mut [LiveSpan],
    sites: &[(u32, Option<u64>)],
    event: u64,
    rss: u64,
    page: u64,
    resident: &mut Resident<'_>,
) -> Snapshot {
    let page = page.max(1);
    spans.sort_unstable_by_key(|s| s.start);
    let mut classes = vec![Figures::default(); CLASSES];
    let mut by_site: HashMap<u32, Figures> = HashMap::new();
    let mut live = 0u64;
    // Pages partly covered: (page number, span index, live bytes on it).
    let mut edges: Vec<(u64, u32, u64)> = Vec::new();
    let mut pages = 0u64;
    for (i, s) in spans.iter().enumerate() {
        let c = class_of(s.size) as usize;
        for f in [&mut classes[c], by_site.entry(s.site).or_default()] {
            f.blocks += 1;
            f.live += s.size;
        }
        live += s.size;
        let len = s.size.max(1);
        let end = s.start.saturating_add(len);
        let (first, last) = (s.start / page, (end - 1) / page);
        let mut full_from = first;
        let mut full_to = last + 1;
        if s.start % page != 0 || first == last {
            edges.push((first, i as u32, end.min((first + 1) * page) - s.start));
            full_from = first + 1;
        }
        if last > first && end % page != 0 {
            edges.push((last, i as u32, end - last * page));
            full_to = last;
        }
        if full_to > full_from {
            pages += count_resident(full_from, full_to - full_from, page, resident);
        }
    }
    edges.sort_unstable_by_key(|e| e.0);
    // Residency of the partly covered pages, asked in runs of consecutive pages.
    let mut distinct: Vec<u64> = edges.iter().map(|e| e.0).collect();
    distinct.dedup();
    let mut is_resident: HashMap<u64, bool> = HashMap::with_capacity(distinct.len());
    let mut buf = vec![0u8; RUN];
    let mut i = 0;
    while i < distinct.len() {
        let mut j = i + 1;
        while j < distinct.len() && distinct[j] == distinct[j - 1] + 1 && j - i < RUN {
            j += 1;
        }
        let b = &mut buf[..j - i];
        let known = resident(distinct[i] * page, b);
        for (k, &p) in distinct[i..j].iter().enumerate() {
            is_resident.insert(p, !known || b[k] & 1 != 0);
        }
        i = j;
    }
    for group in edges.chunk_by(|a, b| a.0 == b.0) {
        if !is_resident.get(&group[0].0).copied().unwrap_or(true) {
            continue;
        }
        pages += 1;
        let on_page: u64 = group.iter().map(|e| e.2).sum();
        let free = page.saturating_sub(on_page);
        let k = group.len() as u64;
        for (n, e) in group.iter().enumerate() {
            let share = free / k + u64::from((n as u64) < free % k);
            let s = spans[e.1 as usize];
            classes[class_of(s.size) as usize].stranded += share;
            by_site.entry(s.site).or_default().stranded += share;
        }
    }
    let classes = classes
        .into_iter()
        .enumerate()
        .filter(|(_, f)| f.blocks > 0)
        .map(|(c, figures)| {
            let (lo, hi) = class_bounds(c as u16);
            ClassRow { lo, hi, figures }
        })
        .collect();
    let mut sites: Vec<SiteRow> = by_site
        .into_iter()
        .map(|(i, figures)| {
            let (space, site) = sites.get(i as usize).copied().unwrap_or((0, None));
            SiteRow {
                space,
                site,
                name: None,
                figures,
            }
        })
        .collect();
    sort_sites(&mut sites);
    Snapshot {
        event,
        total: rss,
        live,
        unattributed: rss.saturating_sub(pages.saturating_mul(page)),
        pages,
        page_size: page,
        classes,
        sites,
    }
}
