//! A small element tree over quick-xml, for the EC2 Query API's answers.

use quick_xml::events::Event;

/// An element: its local name, text and children.
#[derive(Debug, Default, Clone)]
pub struct El {
    /// Local name (namespace prefix dropped).
    pub name: String,
    /// Its text.
    pub text: String,
    /// Child elements.
    pub children: Vec<El>,
}

impl El {
    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&El> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The children named `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a El> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The element at a path of child names.
    pub fn at(&self, path: &[&str]) -> Option<&El> {
        path.iter().try_fold(self, |e, n| e.child(n))
    }

    /// The text at a path ("" when absent).
    pub fn text_at(&self, path: &[&str]) -> &str {
        self.at(path).map_or("", |e| e.text.as_str())
    }

    /// The `item`s of the list at a path.
    pub fn items<'a>(&'a self, path: &[&str]) -> Vec<&'a El> {
        self.at(path)
            .map(|l| l.all("item").collect())
            .unwrap_or_default()
    }
}

/// Parses a document; its root element.
pub fn parse(doc: &str) -> Result<El, String> {
    let mut reader = quick_xml::Reader::from_str(doc);
    let mut stack: Vec<El> = vec![El::default()];
    loop {
        match reader.read_event().map_err(|e| format!("XML: {e}"))? {
            Event::Start(s) => stack.push(El {
                name: String::from_utf8_lossy(s.local_name().as_ref()).into_owned(),
                ..El::default()
            }),
            Event::Empty(s) => {
                let el = El {
                    name: String::from_utf8_lossy(s.local_name().as_ref()).into_owned(),
                    ..El::default()
                };
                if let Some(top) = stack.last_mut() {
                    top.children.push(el);
                }
            }
            Event::Text(t) => {
                let text = t.decode().map_err(|e| format!("XML: {e}"))?;
                let text = quick_xml::escape::unescape(&text).map_err(|e| format!("XML: {e}"))?;
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&text);
                }
            }
            Event::GeneralRef(r) => {
                let name = r.decode().map_err(|e| format!("XML: {e}"))?;
                let text = quick_xml::escape::unescape(&format!("&{name};"))
                    .map_err(|e| format!("XML: {e}"))?
                    .into_owned();
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&text);
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::End(_) => {
                let el = stack.pop().ok_or("XML: unbalanced")?;
                match stack.last_mut() {
                    Some(top) => top.children.push(el),
                    None => return Err("XML: unbalanced".into()),
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut doc = stack.pop().ok_or("XML: empty")?;
    doc.children.pop().ok_or_else(|| "XML: no element".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_describe_answer_reads_as_a_tree() {
        let doc = r#"<?xml version="1.0" encoding="UTF-8"?>
<DescribeRegionsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r</requestId>
  <regionInfo><item><regionName>eu-west-1</regionName></item><item><regionName>us-east-1</regionName></item></regionInfo>
  <note>a &amp; b</note><empty/>
</DescribeRegionsResponse>"#;
        let root = super::parse(doc).expect("parse");
        assert_eq!(root.name, "DescribeRegionsResponse");
        let names: Vec<&str> = root
            .items(&["regionInfo"])
            .iter()
            .map(|i| i.text_at(&["regionName"]))
            .collect();
        assert_eq!(names, ["eu-west-1", "us-east-1"]);
        assert_eq!(root.text_at(&["note"]), "a & b");
        assert!(root.child("empty").is_some());
    }
}
