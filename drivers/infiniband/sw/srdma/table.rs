// SPDX-License-Identifier: GPL-2.0-only

//! Tables of objects by number (QP numbers, memory keys), shared by the data path.

use kernel::{
    new_mutex,
    prelude::*,
    rbtree::RBTree,
    sync::{Arc, Mutex},
};

/// Objects by number; a number is reserved first and its object published once created.
pub(crate) struct IdTable<V> {
    ids: RBTree<u32, Option<Arc<V>>>,
    next: u32,
    min: u32,
    max: u32,
}

pub(crate) type Table<V> = Arc<Mutex<IdTable<V>>>;

/// Creates a table handing out numbers in `min..=max`.
pub(crate) fn new_table<V: Send + Sync>(min: u32, max: u32) -> Result<Table<V>> {
    Arc::pin_init(
        new_mutex!(IdTable {
            ids: RBTree::new(),
            next: min,
            min,
            max,
        }),
        GFP_KERNEL,
    )
}

impl<V> IdTable<V> {
    /// Returns the object with number `id`, if it exists and is fully created.
    pub(crate) fn get(&self, id: u32) -> Option<Arc<V>> {
        self.ids.get(&id).and_then(|v| v.clone())
    }

    /// Calls `f` on every fully created object.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&V)) {
        for (_, v) in self.ids.iter() {
            if let Some(v) = v {
                f(v);
            }
        }
    }
}

/// A number taken from a table; given back when dropped.
pub(crate) struct Reservation<V: Send + Sync> {
    table: Table<V>,
    id: u32,
}

impl<V: Send + Sync> Reservation<V> {
    /// Takes the next free number, searching round-robin so that numbers are not reused soon.
    pub(crate) fn new(table: &Table<V>) -> Result<Self> {
        let mut t = table.lock();
        let span = t.max - t.min + 1;
        for i in 0..span {
            let id = t.min + (t.next - t.min + i) % span;
            if t.ids.get(&id).is_none() {
                t.ids.try_create_and_insert(id, None, GFP_KERNEL)?;
                t.next = if id == t.max { t.min } else { id + 1 };
                return Ok(Self {
                    table: table.clone(),
                    id,
                });
            }
        }
        Err(ENOMEM)
    }

    /// Takes the number `id`, outside the table's range (for well-known numbers); fails with
    /// `EBUSY` if it is taken.
    pub(crate) fn fixed(table: &Table<V>, id: u32) -> Result<Self> {
        let mut t = table.lock();
        if t.ids.get(&id).is_some() {
            return Err(EBUSY);
        }
        t.ids.try_create_and_insert(id, None, GFP_KERNEL)?;
        Ok(Self {
            table: table.clone(),
            id,
        })
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// Makes the object findable under the reserved number.
    pub(crate) fn publish(&self, obj: Arc<V>) {
        if let Some(slot) = self.table.lock().ids.get_mut(&self.id) {
            *slot = Some(obj);
        }
    }
}

impl<V: Send + Sync> Drop for Reservation<V> {
    fn drop(&mut self) {
        self.table.lock().ids.remove(&self.id);
    }
}
