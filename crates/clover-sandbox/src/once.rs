//! One value per key, made once however many threads ask for it at the same time.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

/// A map whose values are made on first use, once per key: concurrent callers of one key
/// wait for the first one's `make` and share its value.
///
/// `make` can fail in two ways. A value that records a failure (a library that does not
/// compile) is a value like any other: every later caller gets it. An `Err` from `make` says
/// the work could not be carried out at all (the sandbox failed on the host): it is returned
/// to this caller, the key is forgotten so that a later caller tries again, and callers that
/// were already waiting get `Ok(None)`.
///
/// A build cache shared by concurrent runs is the case it is made for.
#[derive(Debug)]
pub struct OnceMap<K, V> {
    slots: Mutex<HashMap<K, Arc<OnceLock<Option<V>>>>>,
}

impl<K, V> Default for OnceMap<K, V> {
    fn default() -> Self {
        OnceMap {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> OnceMap<K, V> {
    /// The value of `key`, made by `make` if no caller made it before.
    pub fn get_or_make<E>(
        &self,
        key: &K,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<Option<V>, E> {
        let slot = {
            let mut slots = self.slots.lock().expect("no panic while holding the lock");
            Arc::clone(slots.entry(key.clone()).or_default())
        };
        let mut failed = None;
        let value = slot.get_or_init(|| match make() {
            Ok(v) => Some(v),
            Err(e) => {
                failed = Some(e);
                None
            }
        });
        if let Some(e) = failed {
            self.slots
                .lock()
                .expect("no panic while holding the lock")
                .remove(key);
            return Err(e);
        }
        Ok(value.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_value_is_made_once_for_all_threads() {
        let map: OnceMap<&str, usize> = OnceMap::default();
        let made = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let v = map.get_or_make(&"k", || -> Result<usize, ()> {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        Ok(made.fetch_add(1, Ordering::SeqCst) + 41)
                    });
                    assert_eq!(v, Ok(Some(41)));
                });
            }
        });
        assert_eq!(made.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_failure_to_make_is_forgotten_and_tried_again() {
        let map: OnceMap<u8, &str> = OnceMap::default();
        assert_eq!(map.get_or_make(&1, || Err("host")), Err("host"));
        assert_eq!(
            map.get_or_make(&1, || Ok::<_, &str>("made")),
            Ok(Some("made"))
        );
        // Made once: a later maker is not called.
        assert_eq!(
            map.get_or_make(&1, || -> Result<&str, &str> { panic!("made twice") }),
            Ok(Some("made"))
        );
    }
}
