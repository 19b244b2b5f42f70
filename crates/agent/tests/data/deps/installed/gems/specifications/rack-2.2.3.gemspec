# -*- encoding: utf-8 -*-
# stub: rack 2.2.3 ruby lib

Gem::Specification.new do |s|
  s.name = "rack".freeze
  s.version = "2.2.3"

  s.required_rubygems_version = Gem::Requirement.new(">= 0".freeze) if s.respond_to? :required_rubygems_version=
  s.require_paths = ["lib".freeze]
  s.authors = ["trusthub tests".freeze]
  s.date = "2026-11-27"
  s.licenses = ["MIT".freeze]
  s.rubygems_version = "3.3.15".freeze
  s.summary = "a local stand-in".freeze

  s.installed_by_version = "3.3.15" if s.respond_to? :installed_by_version
end
