//! A tiny slab: stable indices for connections in an event loop.

/// Vector of optional entries with a free list; indices stay valid until removed.
#[derive(Debug)]
pub struct Slab<T> {
    entries: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// Store `value`, returning its index.
    pub fn insert(&mut self, value: T) -> usize {
        if let Some(i) = self.free.pop() {
            self.entries[i] = Some(value);
            i
        } else {
            self.entries.push(Some(value));
            self.entries.len() - 1
        }
    }

    /// The index the next [`Slab::insert`] will use.
    pub fn vacant_key(&self) -> usize {
        self.free.last().copied().unwrap_or(self.entries.len())
    }

    /// Remove and return the entry at `i`.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        let v = self.entries.get_mut(i)?.take();
        if v.is_some() {
            self.free.push(i);
        }
        v
    }

    /// Borrow the entry at `i`.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.entries.get(i)?.as_ref()
    }

    /// Mutably borrow the entry at `i`.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.entries.get_mut(i)?.as_mut()
    }

    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Indices of live entries.
    pub fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::Slab;

    #[test]
    fn reuses_freed_slots() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None);
        assert_eq!(s.vacant_key(), a);
        let c = s.insert("c");
        assert_eq!(c, a);
        assert_eq!(s.get(b), Some(&"b"));
        assert_eq!(s.len(), 2);
        assert_eq!(s.indices().collect::<Vec<_>>(), vec![0, 1]);
    }
}
