// SPDX-License-Identifier: GPL-2.0-only

//! Tables of objects by number (QP numbers, memory keys), shared by the data path.

use kernel::{
    new_spinlock,
    prelude::*,
    rbtree::{RBTree, RBTreeNode, RBTreeNodeReservation},
    sync::{Arc, SpinLock},
};

/// Objects by number; a number is reserved first and its object published once created.
///
/// The data path looks objects up for every request, so the lock is a spinlock: nothing is
/// allocated or freed while it is held (nodes are allocated before, and removed objects
/// dropped after).
pub(crate) struct IdTable<V> {
    ids: RBTree<u32, Option<Arc<V>>>,
    next: u32,
    min: u32,
    max: u32,
}

pub(crate) type Table<V> = Arc<SpinLock<IdTable<V>>>;

/// Creates a table handing out numbers in `min..=max`.
pub(crate) fn new_table<V: Send + Sync>(min: u32, max: u32) -> Result<Table<V>> {
    Arc::pin_init(
        new_spinlock!(IdTable {
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
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut t = table.lock();
        let span = t.max - t.min + 1;
        for i in 0..span {
            let id = t.min + (t.next - t.min + i) % span;
            if t.ids.get(&id).is_none() {
                t.ids.insert(node.into_node(id, None));
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
        let node = RBTreeNode::new(id, None, GFP_KERNEL)?;
        let mut t = table.lock();
        if t.ids.get(&id).is_some() {
            return Err(EBUSY);
        }
        t.ids.insert(node);
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
        let node = self.table.lock().ids.remove_node(&self.id);
        // The object (and the node) may be freed here, outside the lock.
        drop(node);
    }
}
