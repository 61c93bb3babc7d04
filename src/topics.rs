//! Topic ids → topic names, learned from the capture itself.
//!
//! Place in the data path: the model feeds it every decoded Metadata,
//! CreateTopics and DescribeTopicPartitions response; views ask it to annotate
//! trees, so Produce v13 and Fetch v13+ (which carry only topic ids, KIP-516)
//! show the name beside the id.
//!
//! Invariant: at most `capacity` ids are remembered; past that the table stops
//! learning (the first names seen win), so memory stays bounded on any capture.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::kafka::schema::ApiKey;
use crate::kafka::tree::{format_uuid, Node, Value};

/// Api keys whose responses pair topic ids with names.
pub const TEACHERS: &[ApiKey] = &[
    ApiKey::METADATA,
    ApiKey::CREATE_TOPICS,
    ApiKey::DESCRIBE_TOPIC_PARTITIONS,
];

/// A bounded map from topic id to topic name.
#[derive(Clone, Debug)]
pub struct TopicNames {
    map: HashMap<[u8; 16], String>,
    capacity: usize,
}

impl Default for TopicNames {
    fn default() -> Self {
        TopicNames::with_capacity(100_000)
    }
}

impl TopicNames {
    /// A table remembering at most `capacity` topics.
    pub fn with_capacity(capacity: usize) -> TopicNames {
        TopicNames {
            map: HashMap::new(),
            capacity,
        }
    }

    /// The name of a topic id, if seen.
    pub fn name(&self, id: &[u8; 16]) -> Option<&str> {
        self.map.get(id).map(String::as_str)
    }

    /// The name of a topic id, or the id itself (as a UUID) when not seen.
    pub fn label(&self, id: &[u8; 16]) -> Cow<'_, str> {
        self.name(id)
            .map_or_else(|| Cow::Owned(format_uuid(id)), Cow::Borrowed)
    }

    /// Number of topics known.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no topic is known.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Learns every (TopicId, Name) pair in a response tree of `api_key`.
    pub fn learn(&mut self, api_key: Option<ApiKey>, root: &Node) {
        if !api_key.is_some_and(|k| TEACHERS.contains(&k)) {
            return;
        }
        root.walk(&mut |n, _| {
            let id = n.children.iter().find_map(|c| match (&*c.name, &c.value) {
                ("TopicId", Value::Uuid(u)) if *u != [0; 16] => Some(*u),
                _ => None,
            });
            let name = n.children.iter().find_map(|c| match (&*c.name, &c.value) {
                ("Name" | "TopicName" | "Topic", Value::Str(s)) if !s.is_empty() => Some(s),
                _ => None,
            });
            if let (Some(id), Some(name)) = (id, name) {
                if self.map.len() < self.capacity || self.map.contains_key(&id) {
                    self.map.entry(id).or_insert_with(|| name.clone());
                }
            }
        });
    }

    /// Puts the topic name as the detail of every known `TopicId` in the tree.
    pub fn annotate(&self, root: &mut Node) {
        if self.map.is_empty() {
            return;
        }
        root.walk_mut(&mut |n| {
            if let Value::Uuid(u) = &n.value {
                if n.name.ends_with("TopicId") {
                    if let Some(name) = self.map.get(u) {
                        n.detail = Some(format!("topic {name:?}").into());
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::tree::Role;

    fn topic(id: u8, name: &str) -> Node {
        let mut t = Node::new(
            "Topics[0]",
            "MetadataResponseTopic",
            Value::Text("struct".into()),
            0,
            0,
            Role::ResponseBody,
        );
        t.children.push(Node::new(
            "Name",
            "string",
            Value::Str(name.into()),
            0,
            0,
            Role::ResponseBody,
        ));
        t.children.push(Node::new(
            "TopicId",
            "uuid",
            Value::Uuid([id; 16]),
            0,
            16,
            Role::ResponseBody,
        ));
        t
    }

    #[test]
    fn learns_from_metadata_and_annotates_ids() {
        let mut root = Node::new(
            "MetadataResponse",
            "message v12",
            Value::None,
            0,
            0,
            Role::Message,
        );
        root.children.push(topic(7, "orders"));
        let mut names = TopicNames::default();
        names.learn(Some(ApiKey::FETCH), &root);
        assert!(names.is_empty(), "Fetch responses do not teach");
        names.learn(Some(ApiKey::METADATA), &root);
        assert_eq!(names.name(&[7; 16]), Some("orders"));

        let mut fetch = Node::new(
            "FetchResponse",
            "message v13",
            Value::None,
            0,
            0,
            Role::Message,
        );
        fetch.children.push(Node::new(
            "TopicId",
            "uuid",
            Value::Uuid([7; 16]),
            8,
            16,
            Role::ResponseBody,
        ));
        fetch.children.push(Node::new(
            "TopicId",
            "uuid",
            Value::Uuid([8; 16]),
            24,
            16,
            Role::ResponseBody,
        ));
        names.annotate(&mut fetch);
        assert_eq!(
            fetch.children[0].value_text(),
            format!("{} (topic \"orders\")", format_uuid(&[7; 16]))
        );
        assert_eq!(fetch.children[1].detail, None);
    }

    #[test]
    fn bounded() {
        let mut names = TopicNames::with_capacity(2);
        for i in 1..=5u8 {
            let mut root = Node::new("R", "message", Value::None, 0, 0, Role::Message);
            root.children.push(topic(i, &format!("t{i}")));
            names.learn(Some(ApiKey::METADATA), &root);
        }
        assert_eq!(names.len(), 2);
    }
}
